/**
 * The Portico sidebar: a Lumino widget showing either the search (form and results) or one open
 * interface. The first search runs when the panel is first shown, so JupyterLab's start-up never
 * waits on, or logs failures of, a gateway nobody looked at.
 */
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { DetailView } from './detail-view.js';
import { porticoIcon } from './icon.js';
import { SidebarModel, type SidebarChange } from './model.js';
import { SearchView } from './search-view.js';

export class PorticoSidebar extends Widget {
  readonly model: SidebarModel;
  private readonly searchView: SearchView;
  private readonly detailView: DetailView;
  private shownOnce = false;

  constructor(model = new SidebarModel()) {
    super();
    this.model = model;
    this.id = 'portico-sidebar';
    this.addClass('jp-Portico');
    this.node.dataset.testid = 'portico-sidebar';
    this.title.icon = porticoIcon;
    this.title.caption = 'Portico interfaces';
    this.searchView = new SearchView(model);
    this.detailView = new DetailView(model);
    this.node.append(this.searchView.node, this.detailView.node);
    this.showDetail(false);
    model.changed.connect(this.onChange, this);
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this.detailView.dispose();
    this.model.dispose();
    super.dispose();
  }

  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (!this.shownOnce) {
      this.shownOnce = true;
      void this.model.search();
    }
  }

  private onChange(_: SidebarModel, change: SidebarChange): void {
    switch (change) {
      case 'settings':
        // Another gateway, token or project: what is on screen belongs to the old one.
        this.model.close();
        if (this.shownOnce) void this.model.search();
        else this.searchView.render();
        break;
      case 'results':
        this.searchView.render();
        break;
      case 'modules':
        this.searchView.renderModules();
        break;
      case 'selection': {
        const open = this.model.openUuid !== null;
        this.showDetail(open);
        if (open) this.detailView.renderSelection();
        else this.detailView.dispose();
        break;
      }
      case 'executions':
        this.detailView.renderExecutions();
        break;
      case 'output':
        this.detailView.renderOutput();
        break;
    }
  }

  private showDetail(open: boolean): void {
    this.searchView.node.hidden = open;
    this.detailView.node.hidden = !open;
  }
}
