/**
 * Shapes shared by REST and WebSocket (packages/server/src/contract/common.ts). The zod schemas
 * there are the source of truth; test/protocol-types.test.ts fails when these types drift from them.
 */

export type JsonObject = Record<string, unknown>;

/** One item of a version list: a dict (deep-merged), `'~name'` / `'~name(args)'`, or `'a.b=value'`. */
export type VersionItem = string | JsonObject;
/** Version list applied to the interface's Config defaults, in order. */
export type Version = VersionItem[];

/** An interface record (`InterfaceInfo`). */
export interface InterfaceInfo {
  uuid: string;
  module: string;
  /** What the record is, as the reference server names it: "Interface" for every interface record. */
  kind: string;
  /** The interface class name (older gateways gave it as `kind`). */
  class_name: string;
  /** Resolved configuration (immutable). */
  config: JsonObject;
  /** What context interfaces folded into the identity; null when nothing was. */
  predicate: JsonObject | null;
  /** The normalized version list the record was created from. */
  version: unknown[];
  /** Mutable label; last write wins. */
  label: string | null;
  meta: JsonObject;
  created_by: string;
  /** ISO-8601 UTC. */
  created_at: string;
  archived: boolean;
  /** Its newest run finished (the lifecycle is cached); computed when answered. */
  cached: boolean;
  /** A `portico get …` line that gives back this interface. */
  cli: string;
}

/** A per-field problem (`Issue`), attached to a dotted config path. */
export interface Issue {
  path: string | null;
  message: string;
}

/** What a failure carries (`ErrorDetail`): a stable code, the message, and where they apply the issues or the Python exception class. */
export interface ErrorDetail {
  code: string;
  message: string;
  issues?: Issue[];
  exception?: string;
}

/**
 * A value's MIME bundle (`DisplayBundle`), as Jupyter's display_data carries it: MIME type → data.
 * Text types are strings, JSON types JSON values, binary types base64 text (or null, with the
 * bytes in a binary frame placed by `buffer_paths`).
 */
export type DisplayBundle = Record<string, unknown>;
/** Metadata of a display bundle by MIME type (`DisplayMetadata`). */
export type DisplayMetadata = Record<string, unknown>;
