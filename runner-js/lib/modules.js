'use strict';
// `require` and `import()` for cells, resolving from the kernel's working
// directory (its node_modules and those of its parents), as a script saved
// in that directory would. ESM-only packages are found through their
// package.json `exports` ("import"/"node"/"default" conditions).

const fs = require('fs');
const path = require('path');
const Module = require('module');
const { pathToFileURL } = require('url');

let cached = { cwd: null, require: null };

function requireFromCwd() {
  const cwd = process.cwd();
  if (cached.cwd !== cwd) cached = { cwd, require: Module.createRequire(path.join(cwd, '[cellbox cell]')) };
  return cached.require;
}

/** The global `require` of cells. */
function cellRequire(id) {
  return requireFromCwd()(id);
}
cellRequire.resolve = (id, options) => requireFromCwd().resolve(id, options);
cellRequire.cache = Module._cache;

function pickExport(target) {
  if (typeof target === 'string') return target;
  if (Array.isArray(target)) {
    for (const item of target) {
      const found = pickExport(item);
      if (found) return found;
    }
    return null;
  }
  if (target && typeof target === 'object') {
    for (const condition of ['node', 'import', 'default']) {
      if (condition in target) {
        const found = pickExport(target[condition]);
        if (found) return found;
      }
    }
  }
  return null;
}

/** Find `name[/sub]` in node_modules above the cwd by its `exports` map. */
function resolveEsm(specifier) {
  const parts = specifier.split('/');
  const nameLength = specifier.startsWith('@') ? 2 : 1;
  const name = parts.slice(0, nameLength).join('/');
  const subpath = parts.length > nameLength ? './' + parts.slice(nameLength).join('/') : '.';
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    const folder = path.join(dir, 'node_modules', name);
    const manifest = path.join(folder, 'package.json');
    if (fs.existsSync(manifest)) {
      const pkg = JSON.parse(fs.readFileSync(manifest, 'utf8'));
      let target = null;
      if (pkg.exports !== undefined) {
        const exportsMap = typeof pkg.exports === 'string' || Array.isArray(pkg.exports) || !Object.keys(pkg.exports).some((k) => k.startsWith('.')) ? { '.': pkg.exports } : pkg.exports;
        target = pickExport(exportsMap[subpath]);
      } else {
        target = subpath === '.' ? pkg.module || pkg.main || 'index.js' : subpath;
      }
      if (target) return path.join(folder, target);
    }
    if (path.dirname(dir) === dir) return null;
  }
}

/** The `import()` of cells. */
async function cellImport(specifier) {
  const text = String(specifier);
  if (Module.isBuiltin(text) || /^[a-z][a-z0-9+.-]*:/i.test(text)) return import(text);
  if (text.startsWith('.') || path.isAbsolute(text)) return import(pathToFileURL(path.resolve(process.cwd(), text)).href);
  let resolved;
  try {
    resolved = requireFromCwd().resolve(text);
  } catch (error) {
    resolved = resolveEsm(text);
    if (!resolved) throw error;
  }
  return import(pathToFileURL(resolved).href);
}

module.exports = { cellRequire, cellImport };
