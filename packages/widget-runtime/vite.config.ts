/**
 * Browser bundle: one self-contained ES module, dist/portico-widget.js, that the gateway serves
 * at /static/portico-widget.js. Its entry registers <portico-widget> and re-exports the public API.
 * `tsc -b` writes lib/ (ESM + .d.ts) first; this build only bundles.
 */
import { defineConfig } from 'vite';

export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    minify: 'oxc',
    sourcemap: false,
    copyPublicDir: false,
    lib: {
      entry: 'src/browser.ts',
      formats: ['es'],
      fileName: () => 'portico-widget.js',
    },
    rolldownOptions: {
      output: {
        // Lib mode keeps whitespace for downstream bundlers; this file is served as is.
        minify: true,
        // One file: the only dynamic import is the widget's Blob URL, which stays a runtime import().
        codeSplitting: false,
      },
    },
  },
});
