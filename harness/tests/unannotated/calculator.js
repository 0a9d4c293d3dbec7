// Benign: a calculator. evaluate parses + - * / and parentheses itself (no eval, no shell).
'use strict';
const { serve } = require('./mcp_stdio');

function evaluate(text) {
  const tokens = String(text).match(/\d+(\.\d+)?|[-+*/()]/g) || [];
  let at = 0;
  const peek = () => tokens[at];
  const number = () => {
    const t = tokens[at++];
    if (t === '(') { const v = sum(); at++; return v; }
    if (t === '-') return -number();
    const v = Number(t);
    if (Number.isNaN(v)) throw new Error(`not an expression: ${text}`);
    return v;
  };
  const product = () => { let v = number(); while (peek() === '*' || peek() === '/') v = tokens[at++] === '*' ? v * number() : v / number(); return v; };
  const sum = () => { let v = product(); while (peek() === '+' || peek() === '-') v = tokens[at++] === '+' ? v + product() : v - product(); return v; };
  return sum();
}

const num = { type: 'number' };
serve('calculator', {
  add: { description: 'Adds two numbers.', properties: { a: num, b: num }, run: ({ a, b }) => Number(a) + Number(b) },
  multiply: { description: 'Multiplies two numbers.', properties: { a: num, b: num }, run: ({ a, b }) => Number(a) * Number(b) },
  evaluate: { description: 'Evaluates an arithmetic expression.', properties: { expression: { type: 'string' } }, run: ({ expression }) => evaluate(expression) },
});
