/**
 * Renders an `application/vnd.portico.widget+json` output as the live widget of its interface.
 * Re-rendering the same bundle keeps the mounted widget; disposing the output unmounts it (the
 * runtime closes the socket when the last view of an interface goes).
 *
 * Two paths to one widget: direct (the runtime's own socket to the gateway, the faster one) and
 * through the kernel (the anywidget view `portico.client` puts in the same output where the kernel
 * has anywidget). The direct path is taken when this browser can use it (mime/direct-path.ts);
 * otherwise, when the output carries the kernel's view, that view is rendered here instead, by
 * the widget manager's own renderer: never a dead widget.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { PanelLayout, Widget } from '@lumino/widgets';
import type { WidgetHandle } from '@portico/widget-runtime';
import { mountLiveWidget } from '../live-widget.js';
import { settingsStore, tokenFor } from '../settings.js';
import { PORTICO_WIDGET_MIME } from '../version.js';
import { parseBundle } from './bundle.js';
import { directPathProblem } from './direct-path.js';

/** The MIME type of a Jupyter widget view (ipywidgets, anywidget): the kernel's view of the widget. */
export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** What an output area offers its renderers: the registry with the widget manager's renderer. */
interface RendererSource {
  rendermime: { createRenderer(mimeType: string): IRenderMime.IRenderer; mimeTypes: readonly string[] };
}

export class PorticoWidgetRenderer extends Widget implements IRenderMime.IRenderer {
  private handle: WidgetHandle | undefined;
  /** The kernel's view, when this output shows the widget through the kernel. */
  private kernelView: IRenderMime.IRenderer | undefined;
  private mountedKey: string | undefined;
  /** Increases with every renderModel, so a slow mount that was superseded unmounts itself. */
  private generation = 0;

  constructor(private readonly options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('jp-PorticoWidget');
    this.node.dataset.testid = 'portico-widget';
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const parsed = parseBundle(model.data[this.options.mimeType ?? PORTICO_WIDGET_MIME]);
    if ('error' in parsed) {
      await this.unmount();
      const notice = document.createElement('div');
      notice.className = 'jp-PorticoWidget-notice';
      notice.setAttribute('role', 'alert');
      notice.textContent = parsed.error;
      this.node.replaceChildren(notice);
      return;
    }
    const { bundle } = parsed;
    const key = JSON.stringify([bundle.url, bundle.uuid, bundle.project]);
    if (key === this.mountedKey) return;
    const generation = ++this.generation;
    await this.unmount();
    this.mountedKey = key;
    const kernelView = model.data[WIDGET_VIEW_MIME] !== undefined ? this.rendererSource() : undefined;
    if (kernelView) {
      const problem = await directPathProblem(bundle.url, tokenFor(bundle.url, await settingsStore.ready()));
      if (generation !== this.generation || this.isDisposed) return;
      if (problem) {
        console.info(`[portico] ${bundle.uuid}: showing the widget through the kernel: ${problem}`);
        await this.renderKernelView(kernelView, model);
        return;
      }
    }
    const host = document.createElement('div');
    host.className = 'jp-PorticoWidget-host';
    host.dataset.uuid = bundle.uuid;
    this.node.replaceChildren(host);
    const handle = await mountLiveWidget(host, bundle);
    if (generation !== this.generation || this.isDisposed) {
      await handle?.unmount();
      return;
    }
    this.handle = handle;
  }

  /** The output area (or other ancestor) whose registry can render the kernel's view, if any. */
  private rendererSource(): RendererSource | undefined {
    for (let widget: Widget | null = this.parent; widget; widget = widget.parent) {
      const source = widget as unknown as Partial<RendererSource>;
      if (source.rendermime?.mimeTypes.includes(WIDGET_VIEW_MIME)) return source as RendererSource;
    }
    return undefined;
  }

  /** Renders the kernel's anywidget view of the same output, with the widget manager's renderer. */
  private async renderKernelView(source: RendererSource, model: IRenderMime.IMimeModel): Promise<void> {
    const view = source.rendermime.createRenderer(WIDGET_VIEW_MIME);
    view.addClass('jp-PorticoWidget-kernel');
    this.kernelView = view;
    this.node.replaceChildren();
    const layout = (this.layout as PanelLayout | null) ?? (this.layout = new PanelLayout());
    layout.addWidget(view);
    await view.renderModel(model);
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this.generation += 1;
    void this.unmount();
    super.dispose();
  }

  private async unmount(): Promise<void> {
    this.kernelView?.dispose();
    this.kernelView = undefined;
    const handle = this.handle;
    this.handle = undefined;
    this.mountedKey = undefined;
    await handle?.unmount();
  }
}
