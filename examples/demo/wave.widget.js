// A slider bound to a computation in Python: moving it sends the frequency, Python answers
// with the recomputed curve, and every page showing this interface redraws it.
const SVG = 'http://www.w3.org/2000/svg';

function render({ model, el }) {
  const root = document.createElement('div');
  root.className = 'wave';
  const label = document.createElement('label');
  const slider = document.createElement('input');
  slider.type = 'range';
  slider.min = '0';
  slider.step = '0.1';
  const readout = document.createElement('output');
  label.append('frequency ', slider, ' ', readout);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 -1.1 1 2.2');
  svg.setAttribute('preserveAspectRatio', 'none');
  const line = document.createElementNS(SVG, 'polyline');
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', 'currentColor');
  line.setAttribute('stroke-width', '0.01');
  svg.append(line);
  root.append(label, svg);
  el.append(root);

  const draw = () => {
    slider.max = String(model.get('max_frequency'));
    slider.value = String(model.get('frequency'));
    readout.textContent = Number(model.get('frequency')).toFixed(1);
    line.setAttribute('points', model.get('points').map(([t, y]) => `${t},${-y}`).join(' '));
  };
  const slide = () => {
    model.set('frequency', Number(slider.value));
    model.save_changes();
  };
  slider.addEventListener('input', slide);
  model.on('change', draw);
  draw();
  return () => model.off('change', draw);
}

export default { render };
