/**
 * Content identity (DESIGN §4): the first 24 hex characters of SHA-256 over the RFC 8785
 * canonical JSON of {module, config, predicate}. Key order, whitespace and number spelling do
 * not change it; the gateway computes it, never Python.
 */
import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';

export const UUID_LENGTH = 24;

export function interfaceUuid(module: string, config: unknown, predicate: unknown): string {
  const canonical = canonicalize({ module, config, predicate });
  if (canonical === undefined) throw new TypeError('identity input is not JSON');
  return hash('sha256', canonical, 'hex').slice(0, UUID_LENGTH);
}
