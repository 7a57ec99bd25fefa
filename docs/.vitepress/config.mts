// The guide's site (VitePress): `npm run docs` serves it, test/docs-site.test.ts builds it and fails
// on a dead link. Pages are plain Markdown that read on GitHub too; the README is the front door,
// and Getting started includes its set-up and tour regions, so they are written once.
// No `import … from 'vitepress'`: VitePress is installed apart (.cache/docs-site, by the
// provisioner), out of this folder's module resolution; the config is a plain object.

/** The sidebar by task; test/docs-site.test.ts checks that it lists every page exactly once. */
export const sidebar = [
  { text: 'Start', items: [{ text: 'Getting started', link: '/getting-started' }] },
  {
    text: 'Writing interfaces',
    items: [
      { text: 'Writing an interface', link: '/writing/interfaces' },
      { text: 'Prints and logs', link: '/writing/prints-and-logs' },
      { text: 'Editing source on disk', link: '/writing/reload' },
      { text: 'Values', link: '/writing/values' },
      { text: 'Rich results', link: '/writing/rich-results' },
      { text: 'Widgets', link: '/writing/widgets' },
      { text: 'Moving data', link: '/writing/files' },
      { text: 'Lifetime', link: '/writing/lifetime' },
    ],
  },
  {
    text: 'Clients',
    items: [
      { text: 'REST and curl', link: '/clients/rest' },
      { text: 'Python and notebooks', link: '/clients/notebooks' },
      { text: 'Web pages', link: '/clients/web-pages' },
      { text: 'JupyterLab', link: '/clients/jupyterlab' },
      { text: 'Finding interfaces again', link: '/clients/finding' },
    ],
  },
  {
    text: 'Running',
    items: [
      { text: 'Executions', link: '/running/executions' },
      { text: 'On a Slurm cluster', link: '/running/slurm' },
      { text: 'Live instances on Slurm', link: '/running/slurm-workers' },
    ],
  },
  {
    text: 'Operating',
    items: [
      { text: 'portico serve options', link: '/operating/options' },
      { text: 'Logs and metrics', link: '/operating/logs' },
      { text: 'Heartbeats and compression', link: '/operating/sockets' },
      { text: 'Stopping', link: '/operating/stopping' },
      { text: 'The store', link: '/operating/store' },
      { text: 'PostgreSQL', link: '/operating/postgresql' },
      { text: 'Behind a proxy', link: '/operating/proxy' },
      { text: 'Several gateways', link: '/operating/several-gateways' },
      { text: 'Security', link: '/operating/security' },
      { text: 'Source editing', link: '/operating/source-editing' },
      { text: 'Limits', link: '/operating/limits' },
    ],
  },
  {
    text: 'Reference',
    items: [
      { text: 'Errors', link: '/reference/errors' },
      { text: 'WebSocket frames', link: '/reference/frames' },
      { text: 'Command line', link: '/reference/cli' },
    ],
  },
  { text: 'Working on Portico', items: [{ text: 'Tests, layout, benchmarks', link: '/contributing' }] },
];

export default {
  title: 'Portico',
  description: "Drive a project's Python interface classes remotely from notebooks and web pages.",
  cleanUrls: true,
  lastUpdated: false,
  themeConfig: {
    search: { provider: 'local' },
    sidebar,
    outline: [2, 3],
  },
  markdown: {
    config(md) {
      // The README's links into the guide (`docs/…`) reach the site through Getting started's
      // includes; they name the same pages from the site's root.
      md.core.ruler.push('portico-readme-links', (state) => {
        for (const token of state.tokens) {
          for (const child of token.children ?? []) {
            const href = child.type === 'link_open' ? child.attrGet('href') : null;
            if (href?.startsWith('docs/')) child.attrSet('href', href.slice('docs'.length));
          }
        }
      });
    },
  },
};
