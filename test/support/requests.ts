/**
 * Plain HTTP(S) requests for the tests that go through a TLS proxy (fetch cannot be told to trust
 * one certificate, nor to leave from one loopback address), and the environment a launched
 * gateway gets, and the lines of a streamed answer as they come.
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

/** The NDJSON lines of `res` as they come: `until` waits for one, `all` for the end. */
export function readLines(res: Response) {
  const seen: any[] = [];
  let text = '';
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const more = async () => {
    const { done, value } = await reader.read();
    if (done) return false;
    text += decoder.decode(value, { stream: true });
    const parts = text.split('\n');
    text = parts.pop()!;
    seen.push(...parts.filter(Boolean).map((part) => JSON.parse(part)));
    return true;
  };
  return {
    async until(match: (line: any) => boolean) {
      for (;;) {
        const found = seen.find(match);
        if (found) return found;
        if (!(await more())) throw new Error(`the stream ended without it: ${JSON.stringify(seen)}`);
      }
    },
    async all() {
      while (await more());
      return seen;
    },
  };
}
