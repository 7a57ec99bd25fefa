/** A Store whose every operation is counted and timed in the gateway's metrics. */
import type { FindRequest } from '../contract/search.js';
import type { Metrics } from '../ops/metrics.js';
import type { InterfaceRecord, RecordPatch, Store } from './store.js';

export function instrumentStore(store: Store, metrics: Metrics): Store {
  return {
    get: (uuid: string) => metrics.store('get', () => store.get(uuid)),
    existing: (uuid: string) => metrics.store('existing', () => store.existing(uuid)),
    insert: (record: InterfaceRecord) => metrics.store('insert', () => store.insert(record)),
    update: (uuid: string, patch: RecordPatch) => metrics.store('update', () => store.update(uuid, patch)),
    delete: (uuid: string) => metrics.store('delete', () => store.delete(uuid)),
    search: (request: FindRequest) => metrics.store('search', () => store.search(request)),
    close: () => store.close(),
  };
}
