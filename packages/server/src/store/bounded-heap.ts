/** Keeps the `capacity` smallest entries seen, as a max-heap whose root is the first to go. */
export class BoundedHeap<T> {
  private readonly items: T[] = [];

  constructor(
    private readonly capacity: number,
    private readonly compare: (a: T, b: T) => number,
  ) {}

  /** Keeps the item if it is among the smallest so far; true when it was kept. */
  offer(item: T): boolean {
    const { items, compare } = this;
    if (items.length < this.capacity) {
      items.push(item);
      let at = items.length - 1;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (compare(items[parent]!, item) >= 0) break;
        items[at] = items[parent]!;
        at = parent;
      }
      items[at] = item;
      return true;
    }
    if (compare(item, items[0]!) < 0) {
      let at = 0;
      for (;;) {
        let child = 2 * at + 1;
        if (child >= items.length) break;
        if (child + 1 < items.length && compare(items[child + 1]!, items[child]!) > 0) child++;
        if (compare(items[child]!, item) <= 0) break;
        items[at] = items[child]!;
        at = child;
      }
      items[at] = item;
      return true;
    }
    return false;
  }

  /** The kept entries in ascending order (sorting at most `capacity` entries). */
  sorted(): T[] {
    return this.items.sort(this.compare);
  }
}
