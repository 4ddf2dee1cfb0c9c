// Evaluate one GitHub Actions expression with GitHub's own evaluator (npm @actions/expressions),
// for the tests of workflows' `if:` conditions. Reads {"expression": "...", "contexts": {...}}
// as JSON on stdin; prints the result, coerced as an `if:` coerces it, as JSON: true or false.
// Usage: node scripts/evaluate-expression.mjs MODULE_DIR   (MODULE_DIR: where the package is)
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const where = process.argv[2];
const entry = path.join(where, "node_modules", "@actions", "expressions", "dist", "index.js");
const { Evaluator, Lexer, Parser, data } = await import(pathToFileURL(entry).href);
const { truthy } = await import(pathToFileURL(path.join(path.dirname(entry), "result.js")).href);

const { expression, contexts } = JSON.parse(readFileSync(0, "utf8"));
const names = Object.keys(contexts);
const lexed = new Lexer(expression).lex();
const parsed = new Parser(lexed.tokens, names, []).parse();
const values = JSON.parse(JSON.stringify(contexts), data.reviver);
const evaluator = new Evaluator(parsed, values);
process.stdout.write(JSON.stringify(truthy(evaluator.evaluate())) + "\n");
