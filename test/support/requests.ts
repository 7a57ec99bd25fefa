/**
 * Plain HTTP(S) requests for the tests that go through a TLS proxy (fetch cannot be told to trust
 * one certificate, nor to leave from one loopback address), and the environment a launched
 * gateway gets.
 */
import http from 'node:http';
import https from 'node:https';

export interface Answer {
  status: number;
  body: any;
}

export interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** A certificate to trust (the proxy's self-signed one). */
  ca?: string;
  /** The address the request leaves from (a loopback address the gateway does not trust, say). */
  localAddress?: string;
}

/** One request, JSON in and out (a body that is not JSON is kept as text). */
export function send(url: string, { method = 'GET', headers = {}, body, ca, localAddress }: SendOptions = {}): Promise<Answer> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  const transport = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, { method, ca, localAddress, agent: false, headers: { ...(data ? { 'content-type': 'application/json' } : {}), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: kept as text
        }
        resolve({ status: res.statusCode!, body: parsed });
      });
    });
    req.once('error', reject);
    req.end(data);
  });
}

/** The environment without the PORTICO_* variables the test run itself may have. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PORTICO_')));
}
