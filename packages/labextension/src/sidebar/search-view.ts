/**
 * The search half of the sidebar: the form (module, label, creator, archived, config filters)
 * and the results list. Submitting runs the search; clicking a result opens it.
 */
import { FILTER_OPS, type FilterOp, type InterfaceInfo, type SearchItem } from '@portico/protocol';
import { classNameOf, h, shortDate, shortId } from './dom.js';
import type { SidebarModel } from './model.js';
import type { ConfigFilterRow, SearchQuery } from './query.js';

export class SearchView {
  readonly node: HTMLElement;
  private readonly module = h('input', {
    testid: 'portico-search-module',
    attrs: { type: 'search', placeholder: 'module contains…', 'aria-label': 'Module', list: 'portico-modules' },
  });
  private readonly moduleList = h('datalist', { attrs: { id: 'portico-modules' } });
  private readonly label = h('input', { testid: 'portico-search-label', attrs: { type: 'search', placeholder: 'label contains…', 'aria-label': 'Label' } });
  private readonly creator = h('input', { testid: 'portico-search-creator', attrs: { type: 'search', placeholder: 'creator contains…', 'aria-label': 'Creator' } });
  private readonly archived = h('input', { testid: 'portico-search-archived', attrs: { type: 'checkbox' } });
  private readonly filters = h('div', { className: 'jp-Portico-filters', testid: 'portico-config-filters' });
  private readonly status = h('div', { className: 'jp-Portico-status', testid: 'portico-search-status', attrs: { 'aria-live': 'polite' } });
  private readonly list = h('ul', { className: 'jp-Portico-results', testid: 'portico-results' });
  private readonly more = h('button', { className: 'jp-Button jp-mod-styled', testid: 'portico-load-more', text: 'More', on: { click: () => void this.model.loadMore() } });

  constructor(private readonly model: SidebarModel) {
    const form = h(
      'form',
      { className: 'jp-Portico-form', testid: 'portico-search-form', on: { submit: (event) => this.submit(event) } },
      this.module,
      this.moduleList,
      this.label,
      this.creator,
      this.filters,
      h(
        'div',
        { className: 'jp-Portico-row' },
        h('button', {
          className: 'jp-Button jp-mod-styled',
          testid: 'portico-config-filter-add',
          text: '+ Config filter',
          attrs: { type: 'button' },
          on: { click: () => this.addFilter({ path: '', op: 'eq', value: '' }, true) },
        }),
        h('label', { className: 'jp-Portico-check' }, this.archived, ' archived'),
      ),
      h('button', { className: 'jp-Button jp-mod-styled jp-mod-accept', testid: 'portico-search-submit', text: 'Search', attrs: { type: 'submit' } }),
    );
    this.node = h('div', { className: 'jp-Portico-search' }, form, this.status, this.list, this.more);
    this.render();
  }

  /** Redraws the status line and the results. */
  render(): void {
    const { model } = this;
    const gateway = model.settings.gatewayUrl;
    if (model.searchError) {
      this.status.className = 'jp-Portico-status jp-mod-error';
      this.status.textContent = model.searchError;
    } else {
      this.status.className = 'jp-Portico-status';
      this.status.textContent = model.searching
        ? `Searching ${gateway}…`
        : model.searched
          ? `${model.total}${model.totalExact ? '' : '+'} interface${model.total === 1 && model.totalExact ? '' : 's'} on ${gateway}`
          : `Gateway: ${gateway}`;
    }
    this.list.replaceChildren(...model.results.map((info) => this.item(info)));
    this.more.hidden = !model.nextCursor;
    this.more.disabled = model.searching;
  }

  /** The module suggestions, from the project index. */
  renderModules(): void {
    this.moduleList.replaceChildren(...(this.model.modules ?? []).map((item) => h('option', { attrs: { value: item.module }, text: item.doc ?? '' })));
  }

  private item(info: SearchItem | InterfaceInfo): HTMLElement {
    return h(
      'li',
      {
        className: `jp-Portico-result${info.archived ? ' jp-mod-archived' : ''}`,
        testid: 'portico-result',
        dataset: { uuid: info.uuid },
        attrs: { tabindex: '0', role: 'button', title: info.uuid },
        on: {
          click: () => void this.model.open(info.uuid),
          keydown: (event) => {
            if (event.key === 'Enter' || event.key === ' ') {
              event.preventDefault();
              void this.model.open(info.uuid);
            }
          },
        },
      },
      h('div', { className: 'jp-Portico-result-title', text: info.label ?? info.module }),
      h(
        'div',
        { className: 'jp-Portico-result-meta' },
        info.label ? `${info.module} · ` : '',
        `${classNameOf(info)} · ${info.created_by} · ${shortDate(info.created_at)} · ${shortId(info.uuid)}`,
        info.archived ? h('span', { className: 'jp-Portico-badge', text: 'archived' }) : null,
      ),
    );
  }

  private addFilter(row: ConfigFilterRow, focus = false): void {
    const path = h('input', { testid: 'portico-config-filter-path', attrs: { placeholder: 'config path', 'aria-label': 'Config path', value: row.path } });
    const op = h('select', { testid: 'portico-config-filter-op', attrs: { 'aria-label': 'Operator' } }, ...FILTER_OPS.map((name) => h('option', { text: name, attrs: { value: name } })));
    op.value = row.op;
    const value = h('input', { testid: 'portico-config-filter-value', attrs: { placeholder: 'value (JSON or text)', 'aria-label': 'Value', value: row.value } });
    const line = h(
      'div',
      { className: 'jp-Portico-filter', testid: 'portico-config-filter' },
      path,
      op,
      value,
      h('button', {
        className: 'jp-Button jp-mod-minimal',
        testid: 'portico-config-filter-remove',
        text: '×',
        attrs: { type: 'button', title: 'Remove this filter', 'aria-label': 'Remove this filter' },
        on: { click: () => line.remove() },
      }),
    );
    this.filters.append(line);
    if (focus) path.focus();
  }

  /** The form's content as a SearchQuery. */
  private query(): SearchQuery {
    const config = [...this.filters.querySelectorAll<HTMLElement>('.jp-Portico-filter')].map((line) => ({
      path: line.querySelector<HTMLInputElement>('[data-testid=portico-config-filter-path]')!.value,
      op: line.querySelector<HTMLSelectElement>('select')!.value as FilterOp,
      value: line.querySelector<HTMLInputElement>('[data-testid=portico-config-filter-value]')!.value,
    }));
    return { module: this.module.value, label: this.label.value, createdBy: this.creator.value, includeArchived: this.archived.checked, config };
  }

  private submit(event: Event): void {
    event.preventDefault();
    // A filter value that does not parse comes back as the model's searchError.
    void this.model.search(this.query());
  }
}
