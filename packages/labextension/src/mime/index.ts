/**
 * The MIME extension (`jupyterlab.mimeExtension`): renders Portico widget outputs live.
 *
 * `safe: false`: the renderer loads and runs the widget's code from the gateway, so JupyterLab
 * uses it only for trusted outputs (those produced in this session, or in a notebook the user
 * trusted). Untrusted outputs show the bundle's sanitized `text/html` fallback instead.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { PLUGIN_IDS, PORTICO_WIDGET_MIME } from '../version.js';
import { PorticoWidgetRenderer } from './renderer.js';

/**
 * Lower ranks win: ahead of the text/html fallback, and ahead of the Jupyter widget manager's view
 * (-10), which the same output carries where the kernel has anywidget: this renderer then decides
 * between the direct path and that view (renderer.ts).
 */
export const RENDERER_RANK = -20;

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: false,
  mimeTypes: [PORTICO_WIDGET_MIME],
  defaultRank: RENDERER_RANK,
  createRenderer: (options) => new PorticoWidgetRenderer(options),
};

const extension: IRenderMime.IExtension = {
  id: PLUGIN_IDS.mime,
  description: 'Renders application/vnd.portico.widget+json outputs as live Portico widgets.',
  rendererFactory,
  rank: RENDERER_RANK,
  dataType: 'json',
};

export default extension;
