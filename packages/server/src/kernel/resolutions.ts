/**
 * The resolutions a worker gave, remembered for its life (README "Resolutions in the gateway"):
 * repeated REST calls on the same target cost no round trip, until `invalidate` names the module
 * (a source edit). An edit made outside the gateway is not seen meanwhile.
 */

export interface Resolved {
  module: string;
  kind: string;
  config: Record<string, unknown>;
  version: unknown[];
}

/** Resolutions remembered per worker (oldest dropped first). */
const RESOLVE_CACHE_SIZE = 1024;

export class Resolutions {
  private readonly entries = new Map<string, Resolved>();
  /** Bumped by every `forget`: a resolution that was in flight meanwhile is not kept. */
  private generation = 0;

  /** `ask`: the worker's own resolution, asked on a miss. */
  constructor(private readonly ask: (module: string, version: unknown[]) => Promise<Resolved>) {}

  /** The resolution of `module` at `version` if it is remembered (nothing asked). */
  peek(module: string, version: unknown[]): Resolved | undefined {
    return this.entries.get(keyOf(module, version));
  }

  /**
   * The resolution of `module` at `version`: remembered (returned as it is, no promise), else
   * asked for (and remembered).
   */
  get(module: string, version: unknown[]): Resolved | Promise<Resolved> {
    const key = keyOf(module, version);
    return this.entries.get(key) ?? this.remember(key, this.ask(module, version));
  }

  private async remember(key: string, asked: Promise<Resolved>): Promise<Resolved> {
    const generation = this.generation;
    const resolved = await asked;
    if (generation !== this.generation) return resolved; // it may have used the code just invalidated
    if (this.entries.size >= RESOLVE_CACHE_SIZE) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, resolved);
    return resolved;
  }

  /** Forgets the resolutions of `modules` and everything below them (`pkg` takes `pkg.sub` along). */
  forget(modules: string[]): void {
    const stale = (module: string) => modules.some((m) => module === m || module.startsWith(`${m}.`));
    this.generation++;
    for (const key of [...this.entries.keys()]) {
      if (stale(moduleOf(key))) this.entries.delete(key);
    }
  }
}

/**
 * The key of a resolution: the module alone (after a NUL, which no JSON text starts with) for the
 * default version, as nearly every REST call by module name asks, else the JSON of both.
 */
function keyOf(module: string, version: unknown[]): string {
  return version.length === 0 ? `\0${module}` : JSON.stringify([module, version]);
}

function moduleOf(key: string): string {
  return key.startsWith('\0') ? key.slice(1) : (JSON.parse(key) as [string])[0];
}
