/**
 * The sidebar's state and operations, free of DOM: search results with paging, the open
 * interface, its runs, and the run whose output is followed live. Views listen to `changed` and
 * read the fields; every network operation aborts the one it supersedes. The followed run's
 * stream is followed-run.ts.
 */
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';
import type { ExecutionInfo, InterfaceInfo, ProjectModule, SearchItem } from '@portico/protocol';
import { GatewayClient, GatewayError } from '../gateway/client.js';
import { settingsStore, type GatewaySettings, type SettingsStore } from '../settings.js';
import { followRun, newFollowedRun, type FollowedRun } from './followed-run.js';
import { EMPTY_QUERY, toFindRequest, type SearchQuery } from './query.js';

/** Runs listed for an interface. */
export const EXECUTIONS_LIMIT = 50;

/** What changed, so a view redraws only its part. */
export type SidebarChange = 'settings' | 'modules' | 'results' | 'selection' | 'executions' | 'output';

type ClientFactory = (settings: GatewaySettings) => GatewayClient;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
const isAbort = (err: unknown) => (err as { name?: string } | null)?.name === 'AbortError';

export class SidebarModel implements IDisposable {
  query: SearchQuery = { ...EMPTY_QUERY, config: [] };
  /** Search items, and the InterfaceInfo a label or archive change answered in place of one. */
  results: Array<SearchItem | InterfaceInfo> = [];
  total = 0;
  /** False when more than `total` match (the gateway stopped counting). */
  totalExact = true;
  nextCursor: string | null = null;
  searching = false;
  searchError: string | null = null;
  /** True once a search has answered (the empty state differs before and after). */
  searched = false;
  /** The project's modules (`GET /v1/project`), once loaded; null before or when it failed. */
  modules: ProjectModule[] | null = null;

  /** The uuid of the open interface (set at once; `selected` follows when it has loaded). */
  openUuid: string | null = null;
  /** Its search item at once, then its InterfaceInfo fetched fresh. */
  selected: SearchItem | InterfaceInfo | null = null;
  detailError: string | null = null;
  executions: ExecutionInfo[] = [];
  executionsError: string | null = null;
  followed: FollowedRun | null = null;

  private readonly changed_ = new Signal<this, SidebarChange>(this);
  private modulesLoad: Promise<void> | undefined;
  private searchAbort: AbortController | undefined;
  private detailAbort: AbortController | undefined;
  private followAbort: AbortController | undefined;
  private disposed = false;

  constructor(
    private readonly store: SettingsStore = settingsStore,
    private readonly createClient: ClientFactory = (settings) =>
      new GatewayClient({ url: settings.gatewayUrl, token: settings.token, project: settings.project }),
  ) {
    store.changed.connect(this.onSettings, this);
  }

  get changed(): ISignal<this, SidebarChange> {
    return this.changed_;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  get settings(): GatewaySettings {
    return this.store.current;
  }

  /** A client for the current settings. */
  client(): GatewayClient {
    return this.createClient(this.store.current);
  }

  /** Runs `query` (or the current one) from its first page. */
  async search(query: SearchQuery = this.query): Promise<void> {
    this.query = query;
    this.searchAbort?.abort();
    const abort = (this.searchAbort = new AbortController());
    this.searching = true;
    this.searchError = null;
    this.emit('results');
    void this.loadModules();
    try {
      const page = await this.client().search(toFindRequest(query), abort.signal);
      if (abort.signal.aborted) return;
      this.results = page.items;
      this.total = page.total;
      this.totalExact = page.total_exact !== false;
      this.nextCursor = page.next_cursor;
    } catch (err) {
      if (abort.signal.aborted || isAbort(err)) return;
      this.results = [];
      this.total = 0;
      this.nextCursor = null;
      this.searchError = message(err);
    }
    this.searching = false;
    this.searched = true;
    this.emit('results');
  }

  /** Appends the next page of the current search. */
  async loadMore(): Promise<void> {
    if (!this.nextCursor || this.searching) return;
    const abort = (this.searchAbort = new AbortController());
    this.searching = true;
    this.emit('results');
    try {
      const page = await this.client().search(toFindRequest(this.query, this.nextCursor), abort.signal);
      if (abort.signal.aborted) return;
      const seen = new Set(this.results.map((item) => item.uuid));
      this.results = [...this.results, ...page.items.filter((item) => !seen.has(item.uuid))];
      this.total = page.total;
      this.totalExact = page.total_exact !== false;
      this.nextCursor = page.next_cursor;
    } catch (err) {
      if (abort.signal.aborted || isAbort(err)) return;
      this.searchError = message(err);
    }
    this.searching = false;
    this.emit('results');
  }

  /**
   * Whether `module` ships a widget: from the project index; undefined when the index is not
   * known (then the widget is tried, and the runtime explains a failure).
   */
  hasWidget(module: string): boolean | undefined {
    return this.modules?.find((item) => item.module === module)?.widget;
  }

  /** Loads the project's modules once per settings (for widget flags and module suggestions). */
  loadModules(): Promise<void> {
    this.modulesLoad ??= this.client()
      .project()
      .then(
        (index) => {
          this.modules = index.modules;
          this.emit('modules');
        },
        () => {
          this.modules = null; // an older gateway or no access: nothing to suggest
        },
      );
    return this.modulesLoad;
  }

  /** Opens an interface: its InterfaceInfo (fetched fresh) and its runs. */
  async open(uuid: string): Promise<void> {
    this.close();
    const abort = (this.detailAbort = new AbortController());
    this.openUuid = uuid;
    this.selected = this.results.find((item) => item.uuid === uuid) ?? null;
    this.emit('selection');
    try {
      const [info] = await Promise.all([this.client().get(uuid, abort.signal), this.loadModules()]);
      if (abort.signal.aborted) return;
      this.replace(info);
    } catch (err) {
      if (abort.signal.aborted || isAbort(err)) return;
      this.detailError = message(err);
      this.emit('selection');
      return;
    }
    await this.refreshExecutions();
  }

  /** Back to the results. */
  close(): void {
    this.detailAbort?.abort();
    this.stopFollowing();
    const had = this.openUuid !== null;
    this.openUuid = null;
    this.selected = null;
    this.detailError = null;
    this.executions = [];
    this.executionsError = null;
    if (had) this.emit('selection');
  }

  /** Sets the label of the open interface; blank text clears it. */
  async rename(label: string): Promise<void> {
    const selected = this.selected;
    if (!selected) return;
    await this.mutate(() => this.client().setLabel(selected.uuid, label.trim() === '' ? null : label.trim()));
  }

  /** Archives the open interface, or restores it. */
  async setArchived(archived: boolean): Promise<void> {
    const selected = this.selected;
    if (!selected) return;
    await this.mutate(() => this.client().archive(selected.uuid, !archived));
  }

  /** Reloads the runs of the open interface. */
  async refreshExecutions(): Promise<void> {
    const selected = this.selected;
    if (!selected) return;
    const signal = this.detailAbort?.signal;
    try {
      const runs = await this.client().executions(selected.uuid, { limit: EXECUTIONS_LIMIT }, signal);
      if (signal?.aborted || this.selected?.uuid !== selected.uuid) return;
      this.executions = runs;
      this.executionsError = null;
    } catch (err) {
      if (signal?.aborted || isAbort(err)) return;
      this.executionsError = message(err);
    }
    this.emit('executions');
  }

  /** Follows a run's output live (one at a time). */
  follow(execution: string): void {
    this.stopFollowing();
    const abort = (this.followAbort = new AbortController());
    const run = (this.followed = newFollowedRun(execution, this.executions.find((item) => item.uuid === execution) ?? null));
    this.emit('output');
    const hooks = {
      info: (info: ExecutionInfo) => {
        this.executions = this.executions.map((item) => (item.uuid === info.uuid ? info : item));
        this.emit('executions');
      },
      changed: () => this.emit('output'),
    };
    followRun(this.store.current, run, hooks, abort.signal);
  }

  stopFollowing(): void {
    this.followAbort?.abort();
    this.followAbort = undefined;
    if (this.followed) {
      this.followed = null;
      this.emit('output');
    }
  }

  /** Cancels a run (best effort), then reloads the runs. */
  async cancel(execution: string): Promise<void> {
    try {
      await this.client().cancel(execution);
    } catch (err) {
      this.executionsError = message(err);
      this.emit('executions');
      return;
    }
    await this.refreshExecutions();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.searchAbort?.abort();
    this.detailAbort?.abort();
    this.followAbort?.abort();
    this.store.changed.disconnect(this.onSettings, this);
    Signal.clearData(this);
  }

  /** A label or archive change: the answer is the new InterfaceInfo. */
  private async mutate(operation: () => Promise<InterfaceInfo>): Promise<void> {
    try {
      this.replace(await operation());
    } catch (err) {
      this.detailError = err instanceof GatewayError ? `${err.code}: ${err.message}` : message(err);
      this.emit('selection');
    }
  }

  /** Shows `info` as the open interface and in the results. */
  private replace(info: InterfaceInfo): void {
    this.selected = info;
    this.detailError = null;
    this.results = this.results.map((item) => (item.uuid === info.uuid ? info : item));
    this.emit('selection');
    this.emit('results');
  }

  private onSettings(): void {
    this.modules = null;
    this.modulesLoad = undefined;
    this.emit('settings');
  }

  private emit(change: SidebarChange): void {
    if (!this.disposed) this.changed_.emit(change);
  }
}
