// The ES module anywidget runs for a Portico interface shown through the kernel (kernel_widget.py).
// It is the interface's own widget module (SOURCE: what the gateway serves at
// /v1/project/{module}/widget/esm), imported from a blob URL as anywidget imports any _esm, and
// rendered below one notice line that the kernel drives through the `_portico_notice` trait: the
// gateway cannot be reached, the instance was made again, a change was refused. The widget's own
// model is anywidget's: its get/set/save_changes/on/send reach Python through the kernel, which
// relays them to the gateway, so the page needs no route, origin or token to it.
const SOURCE = __PORTICO_WIDGET_SOURCE__;
const NOTICE = '_portico_notice';
const STYLE =
  'box-sizing:border-box;margin:4px 0;padding:6px 8px;border:1px solid #e0a800;border-radius:4px;' +
  'background:#fff8e1;color:#6d4c00;font:12px/1.4 system-ui,sans-serif;white-space:pre-wrap;';

const url = URL.createObjectURL(new Blob([SOURCE], { type: 'text/javascript' }));
let loaded;
try {
  loaded = await import(url);
} finally {
  URL.revokeObjectURL(url);
}
// anywidget's forms: `export default {initialize?, render?}`, a default factory returning one, or
// the older named exports.
const exported = loaded.default ?? loaded;
const widget = typeof exported === 'function' ? await exported() : exported;

export default {
  async initialize(context) {
    return widget.initialize?.(context);
  },
  async render({ model, el, ...rest }) {
    const notice = document.createElement('div');
    notice.className = 'portico-widget-notice';
    notice.setAttribute('role', 'status');
    notice.style.cssText = STYLE;
    const body = document.createElement('div');
    el.append(notice, body);
    const show = () => {
      const text = model.get(NOTICE);
      notice.hidden = !text;
      notice.textContent = text ? `Portico widget: ${text}` : '';
    };
    show();
    model.on(`change:${NOTICE}`, show);
    const cleanup = await widget.render?.({ model, el: body, ...rest });
    return () => {
      model.off(`change:${NOTICE}`, show);
      if (typeof cleanup === 'function') cleanup();
    };
  },
};
