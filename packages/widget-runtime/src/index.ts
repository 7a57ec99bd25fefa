/**
 * @portico/widget-runtime — the browser host for Portico widgets.
 *
 * The anywidget-compatible model, module loader, `mount()` and `<portico-widget>` arrive with
 * issue 6; until then this package exports the protocol version it speaks so that the
 * workspace builds end to end.
 */
export const PROTOCOL_VERSION = '1.0';
