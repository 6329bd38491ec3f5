// skein web UI: the shape of a typed promise's value (the JSON Schema
// that skein.Promise[T] records, internal/shape, given as the "schema" of
// the op in GET /v1/runs/{id}/ops): a short description of it for people,
// an example value, and a check of a value before it is sent. The check
// follows internal/shape/check.go, on the parsed value, and refuses only
// what the server would refuse too: where the parsed value cannot tell
// (the text of a number, a key matched ignoring case outside ASCII, a
// ",string" field's contents, a value next to a 64-bit bound), it leaves
// the answer to the server, whose message the settle box shows as well.
'use strict';

(() => {
  const MAX_DEPTH = 4; // how deep describe and example go (recursive types)

  function types(r) {
    if (!r || r.type === undefined) return [];
    return Array.isArray(r.type) ? r.type : [r.type];
  }

  // resolve follows "$ref" ("#" or "#/$defs/NAME") to a schema; undefined
  // for a reference it cannot follow (then anything is accepted).
  function resolve(root, r) {
    for (let i = 0; r && typeof r === 'object' && r.$ref !== undefined; i++) {
      if (i > 32) return undefined;
      if (r.$ref === '#') { r = root; continue; }
      const m = /^#\/\$defs\/([^/]*)$/.exec(r.$ref);
      if (!m || !root.$defs) return undefined;
      r = root.$defs[m[1].replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    return r;
  }

  // ---- describe: a TypeScript-like line, e.g. {approved: boolean, by: string} ----

  function describe(schema) { return desc(schema, schema, 0); }

  function desc(root, r, depth) {
    r = resolve(root, r);
    if (r === undefined || r === true || r === null) return 'any';
    if (r === false) return 'nothing';
    if (depth > MAX_DEPTH) return '…';
    let ts = types(r).filter((t) => t !== 'null');
    if (types(r).length > 0 && ts.length === 0) return 'null';
    if (ts.length === 0) ts = ['any'];
    return ts.map((t) => descType(root, r, t, depth)).join(' | ');
  }

  function descType(root, r, t, depth) {
    const notes = [];
    if (r.format) notes.push(r.format);
    if (r.contentEncoding) notes.push(r.contentEncoding);
    if (r.minimum !== undefined) notes.push('≥ ' + r.minimum);
    if (r.maximum !== undefined) notes.push('≤ ' + r.maximum);
    const note = notes.length && (t === 'string' || t === 'integer' || t === 'number') ? ' (' + notes.join(', ') + ')' : '';
    if (t === 'object') {
      const props = Object.entries(r.properties || {});
      const req = new Set(r.required || []);
      const parts = props.map(([k, v]) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)) + (req.has(k) ? '' : '?') + ': ' + desc(root, v, depth + 1));
      if (r.additionalProperties !== undefined && r.additionalProperties !== false) parts.push('[key: string]: ' + desc(root, r.additionalProperties, depth + 1));
      return '{' + parts.join(', ') + '}';
    }
    if (t === 'array') {
      const item = desc(root, r.items, depth + 1);
      return (item.includes(' ') ? '(' + item + ')' : item) + '[]';
    }
    return t + note;
  }

  // ---- example: a value of the shape, for the placeholder ----

  function example(schema) { return ex(schema, schema, 0); }

  function ex(root, r, depth) {
    r = resolve(root, r);
    if (!r || typeof r !== 'object' || depth > MAX_DEPTH) return null;
    const t = types(r).find((x) => x !== 'null');
    if (t === 'object') {
      const o = {};
      for (const [k, v] of Object.entries(r.properties || {})) o[k] = ex(root, v, depth + 1);
      return o;
    }
    if (t === 'array') return [];
    if (t === 'boolean') return false;
    if (t === 'integer' || t === 'number') return r.minimum !== undefined && Number(r.minimum) > 0 ? Number(r.minimum) : 0;
    if (t === 'string') return r.format === 'date-time' ? '2026-01-01T00:00:00Z' : r.format === 'json-number' ? '0' : '';
    return null;
  }

  // ---- check ----

  // check returns null when value (parsed JSON) may have the shape, else
  // the first mismatch as "at PATH: REASON", worded as the server words it.
  function check(schema, value) {
    if (schema === undefined || schema === null || schema === true) return null;
    if (typeof schema === 'object' && schema.$schema === undefined && value === null) return null;
    try {
      walk(schema, schema, value, '$');
      return null;
    } catch (e) {
      if (e instanceof Mismatch) return 'at ' + e.path + ': ' + e.reason;
      throw e;
    }
  }

  class Mismatch {
    constructor(path, reason) { this.path = path; this.reason = reason; }
  }

  function typeOf(v) {
    if (v === null) return 'null';
    if (Array.isArray(v)) return 'array';
    if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
    return typeof v; // boolean, string, object
  }

  function describeValue(v) {
    const t = typeOf(v);
    if (t === 'string') return 'string ' + JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
    if (t === 'boolean' || t === 'integer' || t === 'number') return t + ' ' + String(v);
    return t;
  }

  function allows(r, t) {
    const ts = types(r);
    return ts.length === 0 || ts.includes(t) || (t === 'integer' && ts.includes('number'));
  }

  function member(k) {
    if (k !== '' && /^[A-Za-z0-9_]+$/.test(k)) return '.' + k;
    return '[' + JSON.stringify(k) + ']';
  }

  function walk(root, r, v, path) {
    r = resolve(root, r);
    if (r === undefined || r === null || r === true) return;
    if (r === false) throw new Mismatch(path, 'want no value (the schema is false: the decode fails on any value here)');
    const t = typeOf(v);
    if (!allows(r, t)) throw new Mismatch(path, 'want ' + types(r).join(' or ') + ', got ' + describeValue(v));
    if (t === 'string') return strRules(r, v, path);
    if (t === 'integer' || t === 'number') return numRules(r, v, path);
    if (t === 'array') {
      v.forEach((x, i) => {
        if (r.items !== undefined && !(r['x-checkedItems'] !== undefined && i >= r['x-checkedItems'])) walk(root, r.items, x, path + '[' + i + ']');
      });
      return;
    }
    if (t === 'object') objRules(root, r, v, path);
  }

  function objRules(root, r, v, path) {
    const props = r.properties || {};
    const fold = r['x-caseFold'];
    const names = Array.isArray(fold) ? fold : Object.keys(props).sort();
    const ascii = (s) => /^[\x00-\x7f]*$/.test(s);
    // Outside ASCII, Go's case folding is Unicode's: left to the server.
    const unsure = fold && names.some((n) => !ascii(n));
    const seen = new Set();
    let skipRequired = false;
    for (const [k, x] of Object.entries(v)) {
      const p = path + member(k);
      if (r.propertyNames !== undefined) {
        const pn = resolve(root, r.propertyNames);
        if (pn === false) throw new Mismatch(p, 'property name: want no property (propertyNames is false)');
        if (pn && typeof pn === 'object') {
          if (!allows(pn, 'string')) throw new Mismatch(p, 'property name: want ' + types(pn).join(' or ') + ', got ' + describeValue(k));
          strRules(pn, k, p, 'property name: ');
        }
      }
      let sub = r.additionalProperties;
      let name = null;
      if (Object.prototype.hasOwnProperty.call(props, k)) {
        sub = props[k];
        name = k;
      } else if (fold) {
        if (unsure || !ascii(k)) { skipRequired = true; continue; }
        const f = k.toUpperCase();
        name = names.find((n) => Object.prototype.hasOwnProperty.call(props, n) && n.toUpperCase() === f) || null;
        if (name !== null) sub = props[name];
      }
      if (name !== null) seen.add(name);
      walk(root, sub, x, p);
    }
    if (skipRequired) return;
    for (const n of r.required || []) {
      if (!seen.has(n)) throw new Mismatch(path, 'missing required property ' + JSON.stringify(n));
    }
  }

  const INT = /^u?int(8|16|32|64)$/;

  function intRange(f) {
    const bits = BigInt(INT.exec(f)[1]);
    if (f[0] === 'u') return [0n, (1n << bits) - 1n];
    return [-(1n << (bits - 1n)), (1n << (bits - 1n)) - 1n];
  }

  function intRangeText(f) {
    const [lo, hi] = intRange(f);
    return 'integer in ' + f + ' range [' + lo + ', ' + hi + ']';
  }

  function numRules(r, v, path) {
    const got = describeValue(v);
    if (r.format && INT.test(r.format)) {
      if (!Number.isInteger(v)) throw new Mismatch(path, 'want ' + intRangeText(r.format) + ', got ' + got);
      const [lo, hi] = intRange(r.format);
      if (Number.isSafeInteger(v) && (BigInt(v) < lo || BigInt(v) > hi)) throw new Mismatch(path, 'want ' + intRangeText(r.format) + ', got ' + got);
    }
    if (r.format === 'float32' && Math.abs(v) > 3.4028234663852886e38) {
      throw new Mismatch(path, 'want number in float32 range [-3.4028235e+38, 3.4028235e+38], got ' + got);
    }
    // Bounds: where the parsed number is exact (the server compares the text).
    if (!Number.isSafeInteger(v) && Number.isInteger(v)) return;
    const min = r.minimum !== undefined ? Number(r.minimum) : NaN;
    const max = r.maximum !== undefined ? Number(r.maximum) : NaN;
    if (v < min || v > max) {
      const b = !isNaN(min) && !isNaN(max) ? 'a number in [' + r.minimum + ', ' + r.maximum + ']' : !isNaN(min) ? 'a number >= ' + r.minimum : 'a number <= ' + r.maximum;
      throw new Mismatch(path, 'want ' + b + ', got ' + got);
    }
  }

  const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  const DATETIME = /^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/;
  const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

  function strRules(r, s, path, prefix) {
    prefix = prefix || '';
    const got = describeValue(s);
    if (r.contentEncoding === 'base64' && !B64.test(s.replace(/[\r\n]/g, ''))) {
      throw new Mismatch(path, prefix + 'want base64 (contentEncoding base64: the standard alphabet, padded), got ' + got);
    }
    if (r.format === 'date-time' && !DATETIME.test(s)) {
      throw new Mismatch(path, prefix + 'want an RFC 3339 date-time (as Go\'s time.Time decodes it), got ' + got);
    }
    if (r.format === 'json-number' && !NUMBER.test(s)) {
      throw new Mismatch(path, prefix + 'want a number or a string holding a JSON number, got ' + got);
    }
    if (r.format && INT.test(r.format)) {
      const [lo, hi] = intRange(r.format);
      const ok = /^[+-]?\d+$/.test(s) && BigInt(s) >= lo && BigInt(s) <= hi && !(r.format[0] === 'u' && s[0] === '-');
      if (!ok) throw new Mismatch(path, prefix + 'want ' + intRangeText(r.format) + ', got ' + got);
    }
  }

  window.skeinShape = { describe, example, check };
})();
