// The data panel, shown when the project has a `files` module: streams a chosen file up into its
// folder and reads it back through its read() hook (the widget runtime's connect()), with progress.
import { connect } from '/static/portico-widget.js';
import { apiToken, url } from './api.js';
import { $ } from './dom.js';

/** Shows the data panel and wires its Upload and Read back buttons. */
export function setUpData() {
  $('data').hidden = false;
  const progress = $('progress');
  const status = $('transfer-status');
  const show = (done, total, verb) => {
    progress.max = total || 1;
    progress.value = done;
    status.textContent = `${verb} ${done.toLocaleString()}${total ? ` of ${total.toLocaleString()}` : ''} bytes`;
  };
  let files;
  let uploaded;
  $('file').addEventListener('change', () => ($('upload').disabled = !$('file').files.length));
  $('upload').addEventListener('click', async () => {
    const file = $('file').files[0];
    $('upload').disabled = true;
    try {
      files ??= await connect({ url, token: apiToken(), target: 'files' });
      const done = await files.upload(file.name, file, { onProgress: (sent, total) => show(sent, total, 'Uploaded') });
      uploaded = { name: done.path, size: file.size };
      status.textContent = `Uploaded ${done.bytes_written.toLocaleString()} bytes to ${done.path}`;
      $('readback').disabled = false;
    } catch (err) {
      status.textContent = `Upload failed: ${err.message}`;
    } finally {
      $('upload').disabled = false;
    }
  });
  $('readback').addEventListener('click', async () => {
    try {
      const blob = await files.read({ name: uploaded.name }, { onProgress: (received) => show(received, uploaded.size, 'Read') });
      status.textContent = `Read back ${blob.size.toLocaleString()} bytes${blob.size === uploaded.size ? ' (sizes match)' : ' (SIZE MISMATCH)'}`;
    } catch (err) {
      status.textContent = `Read failed: ${err.message}`;
    }
  });
}
