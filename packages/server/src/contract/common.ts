/**
 * Schemas shared by REST and WebSocket. Each is written once and feeds request validation,
 * TypeScript types, /openapi.json and /v1/protocol.
 */
import { LIMITS } from '../config/constants.js';
import { z } from './zod.js';

export const VersionItem = z.union([z.string(), z.record(z.string(), z.unknown())]);

export const Version = z
  .array(VersionItem)
  .describe("Version list applied to the Config defaults: dicts (deep-merged), '~name' / '~name(args)', 'a.b=value'.")
  .openapi('Version', { example: ['~big', { step: 2 }] });

export const JsonObject = z.record(z.string(), z.unknown());

/** A boolean query parameter: true/false or 1/0 (anything else is a 422). */
export const QueryBoolean = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const Uuid = z.string().min(1).max(128).describe('Interface uuid (content hash, or client-supplied).');

/** A label as create and PATCH …/label accept it: bounded, so that every store indexes and counts it alike. */
export const Label = z.string().max(LIMITS.labelMax).describe(`At most ${LIMITS.labelMax} characters (UTF-16 code units).`);

export const InterfaceInfo = z
  .object({
    uuid: z.string(),
    module: z.string(),
    kind: z.string().describe('The interface class name.'),
    config: JsonObject.describe('Resolved configuration (immutable).'),
    predicate: JsonObject.nullable().describe('What context interfaces folded into the identity; null when nothing was.'),
    version: z.array(z.unknown()).describe('The normalized version list the record was created from.'),
    label: z.string().nullable().describe('Mutable label; last write wins.'),
    meta: JsonObject,
    created_by: z.string(),
    created_at: z.string().describe('ISO-8601 UTC.'),
    archived: z.boolean(),
    cli: z.string().describe('A `portico get …` line that gives back this interface: module and version when they are its whole identity, else its uuid.'),
  })
  .openapi('InterfaceInfo');

export const Issue = z.object({ path: z.string().nullable(), message: z.string() }).openapi('Issue');

export const ErrorDetail = z
  .object({
    code: z.string().describe('Stable error code (see /v1/protocol errors).'),
    message: z.string(),
    issues: z.array(Issue).optional().describe('Per-field problems, attached to dotted config paths.'),
    exception: z.string().optional().describe('The Python exception class, for call_failed.'),
  })
  .openapi('ErrorDetail');

export const ErrorResponse = z
  .object({ detail: ErrorDetail, message: z.string().describe('detail.message again, for clients that print a string.') })
  .openapi('ErrorResponse');

export const ValidationIssue = z
  .object({
    type: z.string(),
    loc: z.array(z.union([z.string(), z.number()])),
    msg: z.string(),
    input: z.unknown().optional(),
  })
  .openapi('ValidationError');

export const HTTPValidationError = z
  .object({ detail: z.array(ValidationIssue), message: z.string().describe('The problems in one readable line.') })
  .openapi('HTTPValidationError');
