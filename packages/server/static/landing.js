// The gateway's landing page, its entry: asks the API for the project (or for the token when the
// gateway needs one) and lays out the page from it. What Portico is and how to use it per module
// (module-card.js, snippets.js), a form for every public method with its answers (method-forms.js,
// interface-panel.js, answers.js), the runs (runs.js), and the data panel (data-panel.js) are the
// rooms in landing/; plain DOM everywhere, no HTML parsed from answers into the page.
import { api, useToken } from './landing/api.js';
import { setUpData } from './landing/data-panel.js';
import { $ } from './landing/dom.js';
import { moduleCard } from './landing/module-card.js';
import { showRuns, stopFollowing } from './landing/runs.js';

async function showProject() {
  let index;
  try {
    index = await api('/v1/project');
  } catch (err) {
    if (err.status === 401) {
      $('token-form').hidden = false;
      $('project').textContent = 'Enter the API token to continue.';
      return;
    }
    $('project').textContent = `Cannot load the project: ${err.message}`;
    return;
  }
  $('token-form').hidden = true;
  $('project').textContent = `Project ${index.project}`;
  $('modules').replaceChildren(...index.modules.map(moduleCard));
  $('runs').hidden = false;
  showRuns();
  if (index.modules.some((m) => m.module === 'files' && !m.error)) setUpData();
}

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  useToken($('token').value);
  showProject();
});
$('runs-refresh').addEventListener('click', showRuns);
$('run-close').addEventListener('click', stopFollowing);

showProject();
