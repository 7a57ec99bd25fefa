/**
 * Entry of the browser bundle (dist/portico-widget.js, served by the gateway at
 * /static/portico-widget.js): the public API, plus `<portico-widget>` registered with the
 * serving gateway as its default `url`, so
 *
 *   <script type="module" src="https://gw.example.org/static/portico-widget.js"></script>
 *   <portico-widget target="counter"></portico-widget>
 *
 * is a complete page. The bundle lives in `<gateway>/static/`, so the gateway is one level up.
 */
import { defineElement } from './dom/element.js';

export * from './index.js';

// Through a variable: bundlers rewrite the literal `new URL('…', import.meta.url)` into an asset.
const bundleUrl = import.meta.url;
defineElement({ defaultUrl: new URL('..', bundleUrl).href });
