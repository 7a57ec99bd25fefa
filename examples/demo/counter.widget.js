// The counter's front end: an ordinary anywidget module (no Portico imports).
function render({ model, el }) {
  const button = document.createElement('button');
  button.className = 'counter-button';
  const show = () => {
    button.textContent = `count is ${model.get('count')}`;
  };
  const click = () => {
    model.set('count', model.get('count') + model.get('step'));
    model.save_changes();
  };
  button.addEventListener('click', click);
  model.on('change:count', show);
  show();
  el.appendChild(button);
  return () => {
    model.off('change:count', show);
    button.removeEventListener('click', click);
  };
}

export default { render };
