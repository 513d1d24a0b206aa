// @ts-check
// Line charts on a canvas, drawn from scratch on every refresh: a few series of a few hundred points.

const COLORS = ['#0d6e6e', '#c05621', '#6b46c1', '#2b6cb0', '#b83280', '#2f855a', '#975a16', '#4a5568'];

export function colorOf(index) {
  return COLORS[index % COLORS.length];
}

/**
 * Draws `series` ([{name, points: [[t, v], ...]}]) over the last `spanMs` into `canvas`, with a y axis
 * from 0 to the largest value; `unit` labels the axis.
 */
export function drawChart(canvas, series, { spanMs, unit }) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const g = canvas.getContext('2d');
  g.scale(ratio, ratio);
  g.clearRect(0, 0, width, height);
  const left = 48;
  const bottom = height - 18;
  const now = Date.now();
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.points.map(([, v]) => v))));
  g.font = '11px system-ui, sans-serif';
  g.fillStyle = '#5d6875';
  g.strokeStyle = '#d9dee4';
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i += 1) {
    const y = bottom - (bottom - 6) * (i / 4);
    g.beginPath();
    g.moveTo(left, y + 0.5);
    g.lineTo(width, y + 0.5);
    g.stroke();
    g.fillText(format(max * (i / 4)), 2, y + 4);
  }
  g.fillText(unit, left + 4, 12);
  g.fillText(
    spanMs >= 120_000 ? `${Math.round(spanMs / 60_000)} min ago` : `${Math.round(spanMs / 1000)} s ago`,
    left,
    height - 4,
  );
  g.fillText('now', width - 24, height - 4);
  series.forEach((s, index) => {
    g.strokeStyle = colorOf(index);
    g.lineWidth = 1.5;
    g.beginPath();
    s.points.forEach(([t, v], i) => {
      const x = left + (width - left) * (1 - (now - t) / spanMs);
      const y = bottom - (bottom - 6) * (max === 0 ? 0 : v / max);
      if (i === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    });
    g.stroke();
  });
}

/**
 * The axis's top: the first of 1, 2, 5 and 10 times a power of ten at or above the value.
 * @param {number} value
 * @returns {number}
 */
function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5].map((m) => m * power).find((m) => m >= value) ?? 10 * power;
}

/**
 * @param {number} value
 * @returns {string}
 */
function format(value) {
  if (value >= 1000) return `${+(value / 1000).toPrecision(3)}k`;
  return String(+value.toPrecision(3));
}
