/**
 * anywidget's `experimental.invoke`: a request/response over custom messages. It sends
 * `{id, kind: 'anywidget-command', name, msg}` with `model.send` and resolves with
 * `[response, buffers]` when a `msg:custom` carrying the same `id` arrives (`{id, response}`),
 * so Python code written for anywidget's command protocol answers it unchanged.
 */
import type { AnyModel, Experimental } from '@anywidget/types';
import { WidgetRuntimeError } from '../errors.js';

let counter = 0;

/** Unique enough per page; crypto.randomUUID needs a secure context, which a page may not be. */
function commandId(): string {
  counter += 1;
  return `${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 10)}`;
}

export function createExperimental(model: AnyModel, timeoutMs: number): Experimental {
  return {
    invoke: function invoke<T>(name: string, msg?: unknown, options: { buffers?: DataView[]; signal?: AbortSignal } = {}) {
      const signal = options.signal ?? AbortSignal.timeout(timeoutMs);
      const id = commandId();
      return new Promise<[T, DataView[]]>((resolve, reject) => {
        if (signal.aborted) return reject(abortReason(signal, name));
        const finish = () => {
          model.off('msg:custom', onMessage);
          signal.removeEventListener('abort', onAbort);
        };
        const onMessage = (content: { id?: unknown; response?: T } | null, buffers: DataView[]) => {
          if (content?.id !== id) return;
          finish();
          resolve([content.response as T, buffers]);
        };
        const onAbort = () => {
          finish();
          reject(abortReason(signal, name));
        };
        model.on('msg:custom', onMessage);
        signal.addEventListener('abort', onAbort, { once: true });
        try {
          model.send({ id, kind: 'anywidget-command', name, msg }, undefined, options.buffers ?? []);
        } catch (error) {
          finish();
          reject(error);
        }
      });
    },
  };
}

function abortReason(signal: AbortSignal, name: string): unknown {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'TimeoutError') {
    return new WidgetRuntimeError('timeout', `invoke('${name}') got no answer in time`, { cause: reason });
  }
  return reason;
}
