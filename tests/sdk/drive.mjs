// Drives `interpreter` through the real Codex TypeScript SDK, as an app would.
// Input (JSON in argv[2]): { binary, baseUrl, apiKey, cwd, prompts: [..], resumeWithNewClient }
// Output: one JSON line per turn on stdout.
import { Codex } from "@openai/codex-sdk";

const input = JSON.parse(process.argv[2]);
const options = {
  codexPathOverride: input.binary,
  baseUrl: input.baseUrl,
  apiKey: input.apiKey,
};
const threadOptions = {
  workingDirectory: input.cwd,
  sandboxMode: "danger-full-access",
  skipGitRepoCheck: false,
};

function report(turn, thread) {
  return JSON.stringify({
    threadId: thread.id,
    finalResponse: turn.finalResponse,
    items: turn.items,
    usage: turn.usage,
  });
}

let codex = new Codex(options);
let thread = codex.startThread(threadOptions);
for (const [index, prompt] of input.prompts.entries()) {
  if (index > 0 && input.resumeWithNewClient) {
    codex = new Codex(options);
    thread = codex.resumeThread(thread.id, threadOptions);
  }
  try {
    const turn = await thread.run(prompt);
    console.log(report(turn, thread));
  } catch (error) {
    console.log(JSON.stringify({ error: String(error && error.message ? error.message : error) }));
  }
}
