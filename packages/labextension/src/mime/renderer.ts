/**
 * Renders an `application/vnd.portico.widget+json` output as the live widget of its interface.
 * Re-rendering the same bundle keeps the mounted widget; disposing the output unmounts it (the
 * runtime closes the socket when the last view of an interface goes).
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';
import type { WidgetHandle } from '@portico/widget-runtime';
import { mountLiveWidget } from '../live-widget.js';
import { PORTICO_WIDGET_MIME } from '../version.js';
import { parseBundle } from './bundle.js';

export class PorticoWidgetRenderer extends Widget implements IRenderMime.IRenderer {
  private handle: WidgetHandle | undefined;
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

  override dispose(): void {
    if (this.isDisposed) return;
    this.generation += 1;
    void this.unmount();
    super.dispose();
  }

  private async unmount(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    this.mountedKey = undefined;
    await handle?.unmount();
  }
}
