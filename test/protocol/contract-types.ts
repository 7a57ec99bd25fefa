/**
 * @portico/protocol against the zod contract: each type there must be exactly the type its schema
 * infers (z.input for what a client sends, z.output for what it receives), field by field and
 * modifier by modifier. A drift is a type error on the line of the type that drifted; the test
 * test/protocol-types.test.ts type-checks this file (and `npm test` type-checks test/ as a whole).
 */
import type * as P from '@portico/protocol';
import type { DisplayBundle, DisplayMetadata, ErrorDetail, InterfaceInfo, Issue, Version } from '../../packages/server/src/contract/common.js';
import type { ExecutionInfo, OutputChunk, RunStatus } from '../../packages/server/src/contract/executions.js';
import type { ClientFrames, ExecutionClientFrames, ExecutionServerFrames, ServerFrames } from '../../packages/server/src/contract/frames.js';
import type { ProjectIndex, ProjectModule } from '../../packages/server/src/contract/rest.js';
import type { Filter, FindRequest, SearchItem, SearchItemsResponse, SortSpec } from '../../packages/server/src/contract/search.js';
import type { z } from '../../packages/server/src/contract/zod.js';

/** T with intersections flattened, at every depth, so that equal shapes compare equal however written. */
type Flat<T> = T extends (...args: never[]) => unknown ? T : T extends object ? { [K in keyof T]: Flat<T[K]> } : T;
/** true when A and B are the same type (not merely assignable both ways: an extra optional field differs). */
type Same<A, B> = (<T>() => T extends Flat<A> ? 1 : 2) extends <T>() => T extends Flat<B> ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

type In<S extends z.ZodType> = z.input<S>;
type Out<S extends z.ZodType> = z.output<S>;

/** Frame types of both sides, one entry each: a name on one side only is a drift too. */
type FrameDrift<Mine, Theirs> = {
  [K in keyof Mine | keyof Theirs]: K extends keyof Mine ? (K extends keyof Theirs ? Same<Mine[K], Theirs[K]> : 'only in @portico/protocol') : 'only in the contract';
};
type AllSame<T> = T[keyof T] extends true ? true : false;

type ContractClientFrames = { [K in keyof typeof ClientFrames]: In<(typeof ClientFrames)[K]> };
/** `connected` is documented loosely ({uuid, config, …}); what the gateway sends is an InterfaceInfo, checked below. */
type ContractServerFrames = { [K in keyof typeof ServerFrames]: K extends 'connected' ? { type: 'connected'; id?: P.FrameId; payload: Out<typeof InterfaceInfo> } : Out<(typeof ServerFrames)[K]> };

type ContractExecutionClientFrames = { [K in keyof typeof ExecutionClientFrames]: In<(typeof ExecutionClientFrames)[K]> };
/** `status` is documented as a JSON object; what the gateway sends is an ExecutionInfo, checked below. */
type ContractExecutionServerFrames = {
  [K in keyof typeof ExecutionServerFrames]: K extends 'status' ? { type: 'status'; payload: ExecutionInfo } : Out<(typeof ExecutionServerFrames)[K]>;
};

export type Checks = [
  Expect<Same<P.InterfaceInfo, Out<typeof InterfaceInfo>>>,
  Expect<Same<P.Version, In<typeof Version>>>,
  Expect<Same<P.Issue, Out<typeof Issue>>>,
  Expect<Same<P.ErrorDetail, Out<typeof ErrorDetail>>>,
  Expect<Same<P.DisplayBundle, Out<typeof DisplayBundle>>>,
  Expect<Same<P.DisplayMetadata, Out<typeof DisplayMetadata>>>,
  Expect<AllSame<FrameDrift<P.ClientFrames, ContractClientFrames>>>,
  Expect<AllSame<FrameDrift<P.ServerFrames, ContractServerFrames>>>,
  // The gateway's connected payload satisfies what the contract documents for it.
  Expect<Flat<P.ServerFrames['connected']> extends Out<typeof ServerFrames.connected> ? true : false>,
  Expect<AllSame<FrameDrift<P.ExecutionClientFrames, ContractExecutionClientFrames>>>,
  Expect<AllSame<FrameDrift<P.ExecutionServerFrames, ContractExecutionServerFrames>>>,
  Expect<Flat<P.ExecutionServerFrames['status']> extends Out<typeof ExecutionServerFrames.status> ? true : false>,
  Expect<Same<P.Filter, In<typeof Filter>>>,
  Expect<Same<P.SortSpec, In<typeof SortSpec>>>,
  Expect<Same<P.FindRequest, In<typeof FindRequest>>>,
  Expect<Same<P.SearchItem, Out<typeof SearchItem>>>,
  Expect<Same<P.SearchResponse, Out<typeof SearchItemsResponse>>>,
  Expect<Same<P.ProjectModule, Out<typeof ProjectModule>>>,
  Expect<Same<P.ProjectIndex, Out<typeof ProjectIndex>>>,
  Expect<Same<P.RunStatus, RunStatus>>,
  Expect<Same<P.ExecutionInfo, ExecutionInfo>>,
  Expect<Same<P.OutputChunk, Out<typeof OutputChunk>>>,
];
