/**
 * The Portico widget as an ipywidgets model and view, so a kernel can put a live Portico widget
 * inside ipywidgets layouts (VBox, Tab, …). A kernel opens a `jupyter.widget` comm with
 * `_model_module: "@portico/labextension"`, `_model_name: "PorticoWidgetModel"`,
 * `_view_module: "@portico/labextension"`, `_view_name: "PorticoWidgetView"` (versions "^0.1.0")
 * and the synced keys `url`, `uuid` and `project`; the view mounts that interface's widget.
 * Loaded only through a dynamic import (see plugin.ts).
 */
import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';
import type { WidgetHandle } from '@portico/widget-runtime';
import { mountLiveWidget } from '../live-widget.js';
import { settingsStore } from '../settings.js';
import { PACKAGE_NAME, PACKAGE_VERSION } from '../version.js';

export { IJupyterWidgetRegistry } from '@jupyter-widgets/base';

export const MODULE_NAME = PACKAGE_NAME;
export const MODULE_VERSION = PACKAGE_VERSION;
const MODULE_RANGE = `^${PACKAGE_VERSION}`;

export class PorticoWidgetModel extends DOMWidgetModel {
  override defaults(): Backbone.ObjectHash {
    return {
      ...super.defaults(),
      _model_name: 'PorticoWidgetModel',
      _model_module: MODULE_NAME,
      _model_module_version: MODULE_RANGE,
      _view_name: 'PorticoWidgetView',
      _view_module: MODULE_NAME,
      _view_module_version: MODULE_RANGE,
      /** Gateway base URL; empty means the one in the settings. */
      url: '',
      uuid: '',
      project: null,
    };
  }
}

export class PorticoWidgetView extends DOMWidgetView {
  private handle: Promise<WidgetHandle | undefined> | undefined;

  override render(): void {
    this.el.classList.add('jp-PorticoWidget');
    this.el.dataset.testid = 'portico-ipywidget';
    this.remount();
    this.listenTo(this.model, 'change:url change:uuid change:project', this.remount);
  }

  override remove(): void {
    void this.handle?.then((handle) => handle?.unmount());
    this.handle = undefined;
    super.remove();
  }

  private remount(): void {
    void this.handle?.then((handle) => handle?.unmount());
    const uuid = String(this.model.get('uuid') ?? '');
    const url = String(this.model.get('url') || settingsStore.current.gatewayUrl);
    const project = (this.model.get('project') as string | null) || null;
    const host = document.createElement('div');
    host.className = 'jp-PorticoWidget-host';
    this.el.replaceChildren(host);
    this.handle = uuid ? mountLiveWidget(host, { url, uuid, project }) : Promise.resolve(undefined);
  }
}

export const exported = { PorticoWidgetModel, PorticoWidgetView };
