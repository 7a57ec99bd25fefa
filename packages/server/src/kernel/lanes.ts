/**
 * Per-class resources (`__resources__` on an Interface class, docs/running/slurm-workers.md): with a
 * placement that honours them (Slurm), the instances of a class run on a worker started with the
 * class's resources, one worker per distinct set of resources per (project, interpreter): classes
 * that need the same share an allocation. A lane is such a set; the default lane ('') is the
 * gateway's defaults, where every class without `__resources__` runs and where modules are
 * resolved and described. What a module's class declares is asked once (the `resources` op, on
 * the default lane's worker) and remembered until the project's workers start again on new source.
 */
import { Resources } from '../contract/executions.js';
import { PorticoError } from '../errors.js';

export interface Lane {
  /** '' for the default; else the resources as canonical JSON. */
  key: string;
  resources: Resources | undefined;
}

export const DEFAULT_LANE: Lane = { key: '', resources: undefined };

/** The lane of what a class declared: checked with the keys and values a dispatch's `resources` takes. */
export function laneOf(module: string, declared: unknown): Lane {
  if (declared === null || declared === undefined) return DEFAULT_LANE;
  const parsed = Resources.safeParse(declared);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(the dict)'}: ${issue.message}`).join('; ');
    throw new PorticoError('module_error', `The interface class of '${module}' declares __resources__ Portico cannot ask Slurm for: ${issues}`);
  }
  const entries = Object.entries(parsed.data).filter(([, value]) => value !== undefined);
  if (!entries.length) return DEFAULT_LANE;
  entries.sort(([a], [b]) => (a < b ? -1 : 1));
  return { key: JSON.stringify(Object.fromEntries(entries)), resources: parsed.data };
}

/** The lanes of the modules asked about so far, per (project, interpreter, module). */
export class Lanes {
  private readonly known = new Map<string, Lane>();

  get(project: string, python: string, module: string): Lane | undefined {
    return this.known.get(`${project}\0${python}\0${module}`);
  }

  /** Remembers `lane` for the module's class; returns it. */
  set(project: string, python: string, module: string, lane: Lane): Lane {
    this.known.set(`${project}\0${python}\0${module}`, lane);
    return lane;
  }

  /** The project's source changed: what its classes declare is asked again. */
  forget(project: string): void {
    for (const key of this.known.keys()) if (key.startsWith(`${project}\0`)) this.known.delete(key);
  }
}
