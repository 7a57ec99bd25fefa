/**
 * Where an interface comes from and what became of it, as a node-link DAG:
 *   recipe   — its config, the context interfaces folded into it (`context`), the interfaces it was
 *              derived from (`meta.derived_from`, edge `derivation`)
 *   history  — its runs (`runs`) and the manifest each run used (`manifest`: interpreter and the
 *              sha256 of every module it ran).
 * Edges point parent → child: ancestor → derived, context → interface, interface → run,
 * run → manifest.
 */
import { createHash } from 'node:crypto';
import { LIMITS } from '../config/constants.js';
import type { ExecutionSpec } from '../store/runs.js';
import type { InterfaceRecord } from '../store/store.js';
import type { RequestContext } from './context.js';
import type { ExecutionService } from './executions.js';
import type { InterfaceService } from './interfaces.js';

export const RELS = ['derivation', 'context', 'runs', 'manifest'] as const;
export type Rel = (typeof RELS)[number];

export interface GraphNode {
  uuid: string;
  kind: 'interface' | 'execution' | 'manifest';
  module: string | null;
  /** The interface's version list ([] for runs and manifests), as the reference's nodes carry it. */
  version: unknown[];
  label: string | null;
  attributes: Record<string, unknown>;
}

export interface GraphLink {
  source: string;
  target: string;
  rel: Rel;
}

interface Edge extends GraphLink {
  /** The node at the other end, seen from the node being expanded. */
  other: string;
}

function uuids(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

export class LineageService {
  /** Run uuid → its manifest id and content (a manifest never changes once written). */
  private readonly manifests = new Map<string, { id: string; content: Record<string, unknown> } | null>();

  constructor(
    private readonly interfaces: InterfaceService,
    private readonly executions: ExecutionService,
  ) {}

  async provenance(ctx: RequestContext, uuid: string, depth: number, rels: Rel[] = [...RELS]) {
    await this.interfaces.get(ctx, uuid);
    const world = await this.world(ctx);
    const allowed = new Set(rels);
    const nodes = new Map<string, GraphNode>();
    const links = new Map<string, GraphLink>();
    let truncated = false;
    let frontier = [uuid];
    nodes.set(uuid, (await world.node(uuid))!);
    for (let hop = 0; hop < depth && frontier.length; hop++) {
      const next: string[] = [];
      for (const id of frontier) {
        for (const edge of await world.edges(id)) {
          if (!allowed.has(edge.rel)) continue;
          if (!nodes.has(edge.other)) {
            const node = await world.node(edge.other);
            if (!node) continue; // a dangling reference (e.g. a deleted ancestor)
            if (nodes.size >= LIMITS.provenanceNodes) {
              truncated = true;
              continue;
            }
            nodes.set(edge.other, node);
            next.push(edge.other);
          }
          links.set(`${edge.source}\0${edge.target}\0${edge.rel}`, { source: edge.source, target: edge.target, rel: edge.rel });
        }
      }
      frontier = next;
    }
    return { root: uuid, nodes: [...nodes.values()], links: [...links.values()], truncated };
  }

  /** The depth-1 neighbours over every relation. */
  async related(ctx: RequestContext, uuid: string) {
    await this.interfaces.get(ctx, uuid);
    const world = await this.world(ctx);
    const related = [];
    const seen = new Set<string>();
    for (const edge of await world.edges(uuid)) {
      if (seen.has(edge.other)) continue;
      seen.add(edge.other);
      const node = await world.node(edge.other);
      if (node) related.push({ uuid: node.uuid, kind: node.kind, module: node.module, version: node.version, label: node.label, rel: edge.rel });
    }
    return { uuid, related };
  }

  /** A snapshot of the project's records and runs to walk over. */
  private async world(ctx: RequestContext) {
    const { store, runs } = ctx.project;
    const specs = await runs.all();
    const byRun = new Map(specs.map((s) => [s.uuid, s]));
    const manifestOf = async (spec: ExecutionSpec) => {
      if (!this.manifests.has(spec.uuid) || this.manifests.get(spec.uuid) === null) {
        const content = await runs.manifest(spec.uuid);
        const id = content && createHash('sha256').update(JSON.stringify([content.python, content.platform, content.modules])).digest('hex').slice(0, 24);
        this.manifests.set(spec.uuid, content && id ? { id, content } : null);
      }
      return this.manifests.get(spec.uuid) ?? null;
    };
    const manifestNodes = new Map<string, Record<string, unknown>>();
    const record = (uuid: string): Promise<InterfaceRecord | undefined> => store.get(uuid);

    const node = async (id: string): Promise<GraphNode | undefined> => {
      const iface = await record(id);
      if (iface) {
        return {
          uuid: id,
          kind: 'interface',
          module: iface.module,
          version: iface.version,
          label: iface.label,
          attributes: { kind: iface.kind, class_name: iface.class_name, config: iface.config, predicate: iface.predicate, version: iface.version, created_at: iface.created_at, created_by: iface.created_by },
        };
      }
      const spec = byRun.get(id);
      if (spec) {
        const info = await this.executions.info(ctx, id);
        const manifest = await manifestOf(spec);
        return {
          uuid: id,
          kind: 'execution',
          module: null,
          version: [],
          label: null,
          attributes: { status: info.status, created_at: info.created_at, started_at: info.started_at, finished_at: info.finished_at, manifest: manifest?.id ?? null },
        };
      }
      const manifest = manifestNodes.get(id);
      return manifest ? { uuid: id, kind: 'manifest', module: null, version: [], label: null, attributes: manifest } : undefined;
    };

    const edges = async (id: string): Promise<Edge[]> => {
      const out: Edge[] = [];
      const iface = await record(id);
      if (iface) {
        for (const ancestor of uuids(iface.meta.derived_from)) out.push({ source: ancestor, target: id, rel: 'derivation', other: ancestor });
        for (const ctxUuid of uuids(iface.predicate.context)) out.push({ source: ctxUuid, target: id, rel: 'context', other: ctxUuid });
        for (const spec of specs) if (spec.interfaces.some((i) => i.uuid === id)) out.push({ source: id, target: spec.uuid, rel: 'runs', other: spec.uuid });
        return out;
      }
      const spec = byRun.get(id);
      if (spec) {
        for (const i of spec.interfaces) out.push({ source: i.uuid, target: id, rel: 'runs', other: i.uuid });
        const manifest = await manifestOf(spec);
        if (manifest) {
          manifestNodes.set(manifest.id, manifest.content);
          out.push({ source: id, target: manifest.id, rel: 'manifest', other: manifest.id });
        }
        return out;
      }
      if (manifestNodes.has(id)) {
        // Every run that used this manifest.
        for (const other of specs) if ((await manifestOf(other))?.id === id) out.push({ source: other.uuid, target: id, rel: 'manifest', other: other.uuid });
      }
      return out;
    };
    return { node, edges };
  }
}
