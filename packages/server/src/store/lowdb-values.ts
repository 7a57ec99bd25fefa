/** Records by the value at a path, under the engine's `eq` (lowdb-index.ts): a bucket per value, in created_at order. */
import { canonicalJson, isCompound } from './canonical-json.js';
import type { Getter } from './query.js';
import type { InterfaceRecord } from './store.js';

/**
 * Buckets keyed by JSON value under the engine's `eq`: scalars by themselves (SameValueZero, so
 * `-0` meets `0` and `true` never meets `1`), arrays and objects by their canonical text.
 */
export class ValueMap<B> {
  private readonly scalars = new Map<unknown, B>();
  private readonly compounds = new Map<string, B>();

  get(value: unknown): B | undefined {
    return isCompound(value) ? this.compounds.get(canonicalJson(value)) : this.scalars.get(value);
  }

  /** The bucket for the value, made with `create` when there is none. */
  ensure(value: unknown, create: () => B): B {
    if (isCompound(value)) {
      const key = canonicalJson(value);
      let bucket = this.compounds.get(key);
      if (bucket === undefined) this.compounds.set(key, (bucket = create()));
      return bucket;
    }
    let bucket = this.scalars.get(value);
    if (bucket === undefined) this.scalars.set(value, (bucket = create()));
    return bucket;
  }

  delete(value: unknown): void {
    if (isCompound(value)) this.compounds.delete(canonicalJson(value));
    else this.scalars.delete(value);
  }
}

/** The records holding one value, and how many of them are archived. */
export interface Bucket {
  items: InterfaceRecord[];
  archived: number;
}

/** The records holding each value at one path (records missing it are in no bucket). */
export class ValueIndex {
  readonly values = new ValueMap<Bucket>();

  constructor(
    private readonly read: Getter,
    records: Iterable<InterfaceRecord>,
  ) {
    for (const record of records) this.add(record);
  }

  add(record: InterfaceRecord): void {
    const value = this.read(record);
    if (value === undefined) return;
    let bucket = this.values.get(value);
    if (bucket) bucket.items.push(record);
    // A new bucket holds a one-element array: most values of a path with many values are held once.
    else bucket = this.values.ensure(value, () => ({ items: [record], archived: 0 }));
    if (record.archived) bucket.archived++;
  }

  /** Swaps `old` for `next` in its bucket, or removes it when `next` is undefined. */
  replace(old: InterfaceRecord, next: InterfaceRecord | undefined): void {
    const value = this.read(old);
    const bucket = value === undefined ? undefined : this.values.get(value);
    if (!bucket) return;
    const { items } = bucket;
    const i = items.indexOf(old);
    if (old.archived) bucket.archived--;
    // Order inside a bucket is irrelevant (the engine sorts), so a removal swaps in the last one.
    if (next && this.read(next) === value) {
      items[i] = next;
      if (next.archived) bucket.archived++;
    } else {
      items[i] = items.at(-1)!;
      items.pop();
      if (!items.length) this.values.delete(value);
      if (next) this.add(next);
    }
  }
}

