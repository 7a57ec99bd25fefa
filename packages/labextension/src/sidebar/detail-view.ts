/**
 * The open interface: its InterfaceInfo, label editing, archive / restore, its live widget, and
 * its runs with a live output tail and cancel.
 */
import { renderDisplay, type WidgetHandle } from '@portico/widget-runtime';
import { ENDED_STATUSES, type ExecutionInfo, type InterfaceInfo, type RunEvent, type SearchItem } from '@portico/protocol';
import { mountLiveWidget } from '../live-widget.js';
import { classNameOf, h, shortDate, shortId } from './dom.js';
import type { FollowedRun } from './followed-run.js';
import type { SidebarModel } from './model.js';

const json = (value: unknown) => JSON.stringify(value, null, 2);
const isEmpty = (value: Record<string, unknown>) => Object.keys(value).length === 0;

export class DetailView {
  readonly node: HTMLElement;
  private readonly title = h('h3', { className: 'jp-Portico-title', testid: 'portico-detail-title' });
  private readonly error = h('div', { className: 'jp-Portico-status jp-mod-error', testid: 'portico-detail-error', attrs: { role: 'alert' } });
  private readonly info = h('div', { className: 'jp-Portico-info', testid: 'portico-info' });
  private readonly labelInput = h('input', { testid: 'portico-label-input', attrs: { placeholder: 'label', 'aria-label': 'Label', maxlength: '1024' } });
  private readonly archive = h('button', { className: 'jp-Button jp-mod-styled', testid: 'portico-archive', attrs: { type: 'button' } });
  private readonly widgetHost = h('div', { className: 'jp-Portico-widget', testid: 'portico-detail-widget' });
  private readonly runs = h('ul', { className: 'jp-Portico-runs', testid: 'portico-executions' });
  private readonly runsStatus = h('div', { className: 'jp-Portico-status', testid: 'portico-executions-status' });
  private readonly output = h('div', { className: 'jp-Portico-output', testid: 'portico-execution-panel' });
  private readonly outputHead = h('div', { className: 'jp-Portico-row' });
  private readonly outputProgress = h('div', { className: 'jp-Portico-progress', testid: 'portico-execution-progress' });
  private readonly outputLog = h('pre', { className: 'jp-Portico-log', testid: 'portico-execution-output' });
  /** Figures the followed run emitted; never detached while shown, so their images and iframes are not reloaded. */
  private readonly figures = h('div', { className: 'jp-Portico-figures', testid: 'portico-execution-figures' });
  private readonly shownFigures = new Map<RunEvent, HTMLElement>();
  private figuresOf: string | undefined;
  private widget: { uuid: string; handle: Promise<WidgetHandle | undefined> } | undefined;
  private shownUuid: string | undefined;

  constructor(private readonly model: SidebarModel) {
    const labelForm = h(
      'form',
      {
        className: 'jp-Portico-row',
        testid: 'portico-label-form',
        on: {
          submit: (event) => {
            event.preventDefault();
            void this.model.rename(this.labelInput.value);
          },
        },
      },
      this.labelInput,
      h('button', { className: 'jp-Button jp-mod-styled jp-mod-accept', testid: 'portico-label-save', text: 'Rename', attrs: { type: 'submit' } }),
    );
    this.archive.addEventListener('click', () => void this.model.setArchived(!this.model.selected?.archived));
    this.node = h(
      'div',
      { className: 'jp-Portico-detail', testid: 'portico-detail' },
      h(
        'div',
        { className: 'jp-Portico-row' },
        h('button', {
          className: 'jp-Button jp-mod-minimal',
          testid: 'portico-detail-back',
          text: '← Results',
          attrs: { type: 'button' },
          on: { click: () => this.model.close() },
        }),
        this.archive,
      ),
      this.title,
      this.error,
      labelForm,
      this.info,
      h('h4', { text: 'Widget' }),
      this.widgetHost,
      h(
        'div',
        { className: 'jp-Portico-row' },
        h('h4', { text: 'Runs' }),
        h('button', {
          className: 'jp-Button jp-mod-minimal',
          testid: 'portico-executions-refresh',
          text: 'Refresh',
          attrs: { type: 'button' },
          on: { click: () => void this.model.refreshExecutions() },
        }),
      ),
      this.runsStatus,
      this.runs,
      this.output,
    );
  }

  /** Redraws the InterfaceInfo part; remounts the widget when another interface was opened. */
  renderSelection(): void {
    const { selected, detailError } = this.model;
    this.error.textContent = detailError ?? '';
    this.error.hidden = !detailError;
    if (!selected) {
      this.title.textContent = detailError ? '' : 'Loading…';
      this.info.replaceChildren();
      this.unmountWidget();
      return;
    }
    this.title.textContent = selected.label ?? selected.module;
    if (this.shownUuid !== selected.uuid || document.activeElement !== this.labelInput) this.labelInput.value = selected.label ?? '';
    this.archive.textContent = selected.archived ? 'Restore' : 'Archive';
    this.archive.dataset.archived = String(selected.archived);
    this.info.replaceChildren(this.infoTable(selected));
    if (this.shownUuid !== selected.uuid) {
      this.mountWidget(selected.uuid, selected.module);
      this.shownUuid = selected.uuid;
    }
  }

  renderExecutions(): void {
    const { executions, executionsError } = this.model;
    this.runsStatus.className = executionsError ? 'jp-Portico-status jp-mod-error' : 'jp-Portico-status';
    this.runsStatus.textContent = executionsError ?? (executions.length ? '' : 'No runs.');
    this.runs.replaceChildren(...executions.map((run) => this.runItem(run)));
  }

  renderOutput(): void {
    const run = this.model.followed;
    if (!run) {
      this.output.replaceChildren();
      this.syncFigures(undefined);
      return;
    }
    if (this.output.firstChild !== this.outputHead) this.output.replaceChildren(this.outputHead, this.outputProgress, this.outputLog, this.figures);
    const state = run.error ? `${run.state}: ${run.error}` : run.state;
    const status = run.info ? `${run.info.status}${run.info.cancelled ? ' (cancel requested)' : ''}` : '';
    this.outputHead.replaceChildren(
      h('strong', { text: `Output of ${shortId(run.uuid)}` }),
      h('span', { className: 'jp-Portico-badge', testid: 'portico-execution-state', dataset: { state: run.state }, text: [status, state].filter(Boolean).join(' · ') }),
      h('button', { className: 'jp-Button jp-mod-minimal', text: 'Close', attrs: { type: 'button' }, on: { click: () => this.model.stopFollowing() } }),
    );
    const { progress } = run;
    this.outputProgress.hidden = !progress;
    this.outputProgress.replaceChildren(
      ...(progress
        ? [
            h('progress', { attrs: { max: '1', value: String(progress.value), 'aria-label': progress.message ?? 'Progress' } }),
            h('span', { text: `${Math.round(progress.value * 100)} %${progress.message ? ` · ${progress.message}` : ''}` }),
          ]
        : []),
    );
    this.outputLog.replaceChildren(run.truncated ? '…\n' : '', run.output);
    this.outputLog.scrollTop = this.outputLog.scrollHeight;
    this.syncFigures(run);
  }

  /** Shows the run's figures: new ones are rendered and appended, dropped ones removed, the others left alone. */
  private syncFigures(run: FollowedRun | undefined): void {
    if (this.figuresOf !== run?.uuid) {
      this.shownFigures.clear();
      this.figures.replaceChildren();
      this.figuresOf = run?.uuid;
    }
    const kept = new Set(run?.figures ?? []);
    for (const [event, el] of this.shownFigures) {
      if (kept.has(event)) continue;
      el.remove();
      this.shownFigures.delete(event);
    }
    for (const event of run?.figures ?? []) {
      if (this.shownFigures.has(event) || !event.display) continue;
      const el = h('div', { className: 'jp-Portico-figure', testid: 'portico-execution-figure', attrs: { title: event.at } });
      this.figures.append(el);
      this.shownFigures.set(event, el);
      // Images as <img> and HTML in a sandboxed iframe without scripts: a run's output is not trusted code.
      void renderDisplay(el, { display: event.display, metadata: event.metadata });
    }
  }

  /** Called when the view goes away (back to results, or the panel is disposed). */
  dispose(): void {
    this.unmountWidget();
    this.shownUuid = undefined;
  }

  private infoTable(info: SearchItem | InterfaceInfo): HTMLElement {
    const row = (field: string, value: Node | string) => h('tr', { dataset: { field } }, h('th', { text: field }), h('td', {}, value));
    const block = (value: unknown) => h('pre', { className: 'jp-Portico-json', text: json(value) });
    return h(
      'table',
      {},
      h(
        'tbody',
        {},
        row('uuid', h('code', { text: info.uuid })),
        row('module', info.module),
        row('class_name', classNameOf(info)),
        // A search item has none until the InterfaceInfo, fetched fresh, arrives.
        info.cached === undefined ? null : row('cached', String(info.cached)),
        row('label', info.label ?? '–'),
        row('created_by', info.created_by),
        row('created_at', h('span', { text: shortDate(info.created_at), attrs: { title: info.created_at } })),
        row('archived', String(info.archived)),
        row('config', block(info.config)),
        info.version.length ? row('version', block(info.version)) : null,
        !info.predicate || isEmpty(info.predicate) ? null : row('predicate', block(info.predicate)),
        isEmpty(info.meta) ? null : row('meta', block(info.meta)),
      ),
    );
  }

  private runItem(run: ExecutionInfo): HTMLElement {
    const active = !ENDED_STATUSES.includes(run.status);
    return h(
      'li',
      { className: 'jp-Portico-run', testid: 'portico-execution', dataset: { uuid: run.uuid, status: run.status } },
      h('span', { className: `jp-Portico-badge jp-mod-${run.status}`, text: run.status }),
      h('span', { text: ` ${shortDate(run.created_at)} · ${shortId(run.uuid)}`, attrs: { title: run.uuid } }),
      run.error ? h('div', { className: 'jp-Portico-run-error', text: `${run.error.exception}: ${run.error.message}` }) : null,
      h(
        'div',
        { className: 'jp-Portico-row' },
        h('button', {
          className: 'jp-Button jp-mod-minimal',
          testid: 'portico-execution-follow',
          text: 'Output',
          attrs: { type: 'button' },
          on: { click: () => this.model.follow(run.uuid) },
        }),
        active
          ? h('button', {
              className: 'jp-Button jp-mod-minimal jp-mod-warn',
              testid: 'portico-execution-cancel',
              text: run.cancelled ? 'Cancelling…' : 'Cancel',
              attrs: { type: 'button' },
              on: { click: () => void this.model.cancel(run.uuid) },
            })
          : null,
      ),
    );
  }

  private mountWidget(uuid: string, module: string): void {
    this.unmountWidget();
    if (this.model.hasWidget(module) === false) {
      this.widgetHost.replaceChildren(h('div', { className: 'jp-Portico-status', text: `The module ${module} has no widget.` }));
      return;
    }
    const host = h('div', { className: 'jp-PorticoWidget-host', dataset: { uuid } });
    this.widgetHost.replaceChildren(host);
    const { gatewayUrl, project } = this.model.settings;
    this.widget = { uuid, handle: mountLiveWidget(host, { url: gatewayUrl, uuid, project }) };
  }

  private unmountWidget(): void {
    const widget = this.widget;
    this.widget = undefined;
    this.shownUuid = undefined;
    void widget?.handle.then((handle) => handle?.unmount());
    this.widgetHost.replaceChildren();
  }
}
