/* main.c — `sculpt`: dispatch to a subcommand, plus --help and --version. */
#include "cli.h"
#include "context.h"
#include "kernels.h"
#include "sculpt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int cmd_help(int argc, char **argv);

const sc_cli_command sc_cli_commands[] = {
    {"lsp", "run the language server over stdio",
     "usage: sculpt lsp [--stdio] [--log-level LEVEL] [--max-message-size BYTES]\n"
     "\n"
     "Speaks the Language Server Protocol (3.17) as JSON-RPC over stdin and\n"
     "stdout. Logs go to stderr, and to the client as window/logMessage at the\n"
     "level it asked for. Nothing but protocol is written to stdout.\n"
     "\n"
     "  --stdio                   accepted for clients that pass it (VS Code)\n"
     "  --log-level LEVEL         stderr level: error, warn, info (default), debug;\n"
     "                            $SCULPT_LOG sets the same\n"
     "  --max-message-size BYTES  larger messages are skipped (default 67108864)\n"
     "  --device auto|cpu|cuda    where model work runs (default auto; the device\n"
     "                            setting overrides it); cuda falls back to the CPU\n"
     "                            with a warning saying why\n"
     "  --weights KIND            what the CPU computes in: int8 (the layers'\n"
     "                            matrices int8, the lm_head bf16, f32 on AVX2; oneDNN),\n"
     "                            bf16 (AVX-512), or f32\n"
     "                            (oneDNN or OpenBLAS); default auto: from 50M parameters\n"
     "                            bf16 on CPUs with native bf16, else int8; f32 below;\n"
     "                            $SCULPT_WEIGHTS sets it; the weights setting overrides it\n"
     "\n"
     "Every completion is fitted to the loaded model's context (its\n"
     "max_position_embeddings, or an active sliding window): after the family's\n"
     "frame (BOS, EOS, padding) the canvas takes at most half, the prompt the rest\n"
     "(contextBudget at most); a suffix cut to fit ends without EOS. The folder\n"
     "indexed for repository context is the client's workspace folder when it is\n"
     "in a git work tree, else the opened file's git work tree (found with\n"
     "libgit2), else its folder. Its index is kept in the user's cache and written\n"
     "at exit when files changed, so a restart on an unchanged tree starts warm.\n"
     "sculpt/status carries the state, the context, the index (state, files, cached:\n"
     "reused from the kept index, partial: a bound left files out) and the last\n"
     "failed request (lastError); each completion's data says the index state\n"
     "(\"indexing\" while it is built) and partialIndex.\n"
     "\n"
     "Settings (maxTokens, maxDocumentBytes, indexMaxFiles, ...) come from the\n"
     "client; the README lists them. kvReuse (default true): on the CPU each\n"
     "request reuses the K/V the previous request in its document left where\n"
     "the tokens did not change (data.kvReused: the positions reused, 0 for a\n"
     "full pass), its prompt pinned while it fits (data.promptPinned); false\n"
     "builds every prompt afresh and recomputes every request in full.\n"
     "\n"
     "Exit status: 0 after shutdown then exit, 1 when the stream ends, exit\n"
     "arrives without shutdown, or the client closes the server's stdout.\n",
     sc_cli_lsp},
    {"tokenize", "encode text to token ids, or decode ids to text",
     "usage: sculpt tokenize (--model DIR | --tokenizer FILE) [--decode]\n"
     "       sculpt tokenize (--model DIR | --tokenizer FILE) --jsonl --out FILE.npy\n"
     "                       [--threads N] [--sep TOKEN] [FILE...]\n"
     "\n"
     "Reads raw text on stdin and prints its ids as one line of decimal numbers\n"
     "separated by single spaces. No special tokens are added. With --decode,\n"
     "reads ids (separated by spaces, commas or newlines) and writes the bytes.\n"
     "\n"
     "With --jsonl, reads JSON Lines (the FILEs in order, else stdin; blank lines\n"
     "are skipped), one object with a string \"text\" each, and writes one token\n"
     "stream: every text's ids followed by the id of TOKEN (default\n"
     "<|endoftext|>), as a NumPy .npy array, uint16 when every id is below\n"
     "65536, else int32 (the token cache model/train/train.py reads). Texts are\n"
     "encoded on N threads (default: every online CPU); the stream keeps the\n"
     "input order. A line that is not such an object stops the run, naming\n"
     "FILE:LINE, with no output written. The summary goes to stderr.\n",
     sc_cli_tokenize},
    {"logits", "write the raw lm_head outputs for a list of token ids",
     "usage: sculpt logits --model DIR --ids 12,345,6 --out FILE [--device cpu|cuda]\n"
     "                     [--family NAME] [--threads N] [--repeat N] [--weights KIND]\n"
     "\n"
     "Runs one bidirectional forward pass and writes the lm_head outputs for\n"
     "every position, before any logit shift, as little-endian float32,\n"
     "row-major [n_ids][vocab]. On error, exits non-zero with a one-line reason.\n"
     "--family overrides the detected family; --threads sets the GEMM threads;\n"
     "--repeat N runs the pass N times and logs the mean and best times.\n"
     "--weights int8|bf16|f32|auto: what the CPU computes in (see sculpt help lsp).\n"
     "DIR is a Hugging Face checkpoint folder, or a llama.cpp GGUF file (dream or\n"
     "llada architecture; F32, F16, BF16, Q8_0, Q4_0 tensors) or a folder holding one.\n",
     sc_cli_logits},
    {"model", "inspect, pull and list checkpoints",
     "usage: sculpt model info [--model DIR] [--family NAME] [--json] [--max-seq N]\n"
     "                         [--weights KIND]\n"
     "       sculpt model quantize DIR --out DIR2\n"
     "       sculpt model pull ORG/NAME[@REVISION] [--include PATTERN]... [--json]\n"
     "       sculpt model list [--all] [--json]\n"
     "\n"
     "info (of --model DIR, else the model sculpt loads: $SCULPT_MODEL or the one it\n"
     "ships) prints the family, the sizes, the dtype, the mask and EOS ids, the\n"
     "default EOS penalty (generation_config.json \"eos_penalty\"), whether\n"
     "logits are shifted, what the CPU computes in (weights) and the memory needed\n"
     "(weights, or their int8/bf16 copy, plus one context of --max-seq tokens), one\n"
     "`key: value` per line or, with --json, an object.\n"
     "profile.* is the family profile: the frame ([BOS] prefix [MASK]*m suffix\n"
     "[EOS], and where the BOS comes from), the end tokens, whether masks after\n"
     "an end token become EOS, DreamOn's expand token and limit, the default\n"
     "preset and the upstream preset's loop, with the upstream files it follows.\n"
     "config.json keys override it: sculpt_profile, sculpt_bos_token_id,\n"
     "sculpt_eos_after_suffix, sculpt_end_token_ids, sculpt_eos_fill,\n"
     "sculpt_expand_token_id, sculpt_max_infill, sculpt_preset.\n"
     "quantize writes DIR2 (created if missing) as DIR with the layers' matrices in\n"
     "int8, one f32 scale per row, in one model.safetensors replaced atomically; the\n"
     "embedding, lm_head, norms and every other file are copied as they are. It\n"
     "loads with the int8 rows mapped, computing exactly what --weights int8 on DIR\n"
     "computes, without quantizing at load.\n"
     "pull downloads a model from the Hugging Face hub into huggingface_hub's cache\n"
     "($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), shared with\n"
     "Python tools: config, tokenizer and safetensors files, or with --include only\n"
     "the files matching PATTERN (e.g. '*Q8_0.gguf'; non-GGUF matches bring the\n"
     "config and tokenizer too). Transfers resume, every file is checked against its\n"
     "sha256 or git id, a pull that finds everything downloads nothing. HF_ENDPOINT,\n"
     "HF_TOKEN (or $HF_HOME/token) and HF_HUB_OFFLINE are honoured. Ctrl-C stops;\n"
     "the same command resumes.\n"
     "list shows the cached models of families sculpt runs: size, family, profile,\n"
     "dtype, the weights kind auto picks, the memory that takes and whether it fits\n"
     "(--all: also the snapshots sculpt cannot read, with why).\n"
     "Wherever a model is named (--model, $SCULPT_MODEL, the LSP's modelPath) a\n"
     "model id ORG/NAME[@REVISION] is read from that cache, offline.\n",
     sc_cli_model},
    {"complete", "fill in the middle at FILE:LINE:COL",
     "usage: sculpt complete FILE:LINE:COL [--model DIR] [--preset fast|upstream]\n"
     "                       [--max-tokens N] [--steps N] [--algorithm NAME]\n"
     "                       [--threshold T] [--seed S] [--json]\n"
     "\n"
     "Completes at that position (1-based line, 1-based byte column) from the\n"
     "file's text before and after it, and prints the middle. The model is\n"
     "--model DIR (or a model id ORG/NAME from the Hugging Face cache: sculpt help\n"
     "model), else $SCULPT_MODEL, else the model sculpt ships.\n"
     "\n"
     "  --preset NAME       fast: threshold 0.9 + dual K/V cache, blocks of 32;\n"
     "                      upstream: the family's own evaluation loop and sampling\n"
     "                      (one token per step, entropy or confidence, its\n"
     "                      temperature and top-p, full recompute; p2 for\n"
     "                      Open-dCoder); auto (default): the family's default\n"
     "                      (sculpt model info: profile.preset). Flags below override.\n"
     "  --max-tokens N      canvas length (default 32); at most half the model's\n"
     "                      context, the file's text before and after getting the rest\n"
     "                      (the tokens nearest the position; the text before is\n"
     "                      cut first, down to half)\n"
     "  --lengths A,B,...   several candidate canvas lengths; the most confident wins\n"
     "  --algorithm NAME    threshold (default), confidence, margin, entropy\n"
     "  --threshold T       commit every position scoring >= T each step (default 0.9)\n"
     "  --steps N           fixed-k schedule: N steps for the canvas\n"
     "  --block-len N       semi-autoregressive blocks (default 32; 0 = one block)\n"
     "  --temperature T     0 = greedy (default); else seeded Gumbel-max sampling\n"
     "  --eos-penalty X     subtracted from the logits of the family's end tokens\n"
     "                      (default: the model's generation_config.json\n"
     "                      \"eos_penalty\", else 0)\n"
     "  --top-p P --top-k K --seed S\n"
     "  --no-cache          recompute the whole sequence every step\n"
     "  --drafts on|off     drafts from the file's own text, verified in the passes the\n"
     "                      model runs anyway (default on; off with --preset upstream)\n"
     "  --draft-threshold P a drafted token stays while its p >= P x the p of the\n"
     "                      model's favourite there (default 0.0003; 0 keeps all)\n"
     "  --device auto|cpu|cuda, --family NAME\n"
     "  --weights KIND      int8, bf16, f32 or auto: what the CPU computes in\n"
     "                      (see sculpt help lsp)\n"
     "  --json              the middle with ids, confidences, steps and timings, the\n"
     "                      decoded canvas (canvas_ids), the preset and loop, the\n"
     "                      drafts (offered, drafted, accepted, rejected tokens) and\n"
     "                      tokens_per_pass\n"
     "\n"
     "The file is cut to the model's context as the family's harness would: the\n"
     "prefix from the left first (down to half the room), then the suffix from its\n"
     "end; a cut suffix is followed by no EOS. The middle ends at the family's first\n"
     "end token and never contains a special token.\n"
     "\n"
     "Remote: --backend URL sends the prompt (built here, with repository context)\n"
     "and the suffix to a FIM endpoint in its provider's shape and prints the answer\n"
     "shaped as an editor gets it (cut to its syntactic unit, checked by a reparse, a\n"
     "broken line rewritten once by a second request). A URL whose path ends in\n"
     "/completions, /infill or /api/generate is the endpoint; any other is a base\n"
     "(its path kept: http://h/x/v1 -> http://h/x/v1/fim/completions).\n"
     "  --backend URL --backend-model NAME --timeout MS --max-tries N (429/5xx retries)\n"
     "  --api-key-env VAR   the bearer token's variable (default SCULPT_API_KEY)\n"
     "  --provider NAME     openai-fim (sculpt serve, Mercury, DeepSeek /beta, Ollama\n"
     "                      /v1), mistral (Codestral), llama.cpp (/infill, snippets as\n"
     "                      input_extra), ollama (/api/generate), prompt-template\n"
     "                      (vLLM, SGLang: FIM tokens in the prompt, no suffix);\n"
     "                      auto (the default): from the URL\n"
     "  --fim-template NAME the model's FIM tokens for prompt-template: qwen,\n"
     "                      deepseek, starcoder, codestral (implies prompt-template)\n"
     "  --stream on|off     read the answer as it streams (default on)\n"
     "  --json adds provider, streamed, finish_reason and truncated (the server stopped\n"
     "  at --max-tokens: the answer may be cut off, also said on stderr).\n",
     sc_cli_complete},
    {"batch", "fill holes or fix diagnostics across files, checked",
     "usage: sculpt batch (--holes [--marker TEXT] [--python-ellipsis]\n"
     "                    | --diagnostics FILE|- [--warnings] | --query Q --capture NAME)\n"
     "                    [--check CMD] [--candidates N]\n"
     "                    [--write [--force]] [--json] [--model DIR] PATH...\n"
     "\n"
     "Fills every site under the PATHs (files or folders; hidden entries skipped) and\n"
     "prints a unified diff (a/ b/ headers) to stdout; nothing is written without --write.\n"
     "  --holes             the marker TODO(sculpt) in code or in a comment, never in a\n"
     "                      string or docstring: a comment (or line) holding it is\n"
     "                      replaced whole, indentation kept; in code the marker itself\n"
     "                      is filled in place, on its line\n"
     "  --marker TEXT       the hole marker instead of TODO(sculpt)\n"
     "  --python-ellipsis   a Python function body that is only `...` is a hole too\n"
     "                      (never under @overload or @abstractmethod, in a Protocol or\n"
     "                      abstract class, or in a .pyi stub)\n"
     "  --diagnostics F|-   re-infill the statement at each error as tools print them:\n"
     "                      gcc, clang, go build/vet, mypy, flake8, ruff, pyright, tsc,\n"
     "                      rustc/cargo, javac, Maven, Python's traceback (py_compile), or\n"
     "                      LSP Diagnostic JSON (Diagnostic[], {uri, diagnostics}); the site\n"
     "                      holds the position (a token gcc reports missing before the\n"
     "                      next token goes after the token before), never another\n"
     "                      statement; one missing token (the message's `expected ';'`\n"
     "                      or `'(' was never closed`, else tree-sitter's; of a choice,\n"
     "                      `expected one of ...`, the one token that alone passes the\n"
     "                      checks, or each in turn with --check) is inserted before\n"
     "                      the model is asked\n"
     "  --warnings          warnings are sites too (else only errors; notes, information\n"
     "                      and hints never)\n"
     "  --query Q --capture NAME   re-infill every node the tree-sitter query captures\n"
     "  --candidates N      candidates per site, seed 0 greedy then sampled (1-16;\n"
     "                      default 1, or 4 with --check); the first that passes is kept\n"
     "A candidate passes when the whole file then has no new syntax error and no more\n"
     "than before (tree-sitter), every token outside its site is unchanged, brackets\n"
     "stay balanced, a fix hides no code in a comment or directive nor drops more than\n"
     "a quarter of its statement's non-blank characters (at least 2), no statement that\n"
     "is only a name, member, element or literal appears in its site, a Python file\n"
     "still compiles (python3 -I, compile only; $SCULPT_PYTHON; empty: our own\n"
     "indentation check) and a C/C++ file gets no new compiler error and its site no\n"
     "new statement with no effect (cc -fsyntax-only -Wunused-value; $SCULPT_CC; empty:\n"
     "none; skipped when the compiler cannot find its includes).\n"
     "  --check CMD         the strongest test: each passing candidate is written and\n"
     "                      `sh -c CMD` runs ($SCULPT_BATCH_FILE is the file); the first\n"
     "                      that exits 0 is kept. In a dry run the file is put back.\n"
     "  --temperature T     sampling temperature for seeds > 0 (default 0.8)\n"
     "  --max-tokens N      canvas length for holes (default 32)\n"
     "  --write             atomic replace per file (temp file, fsync, rename), mode kept;\n"
     "                      a symlink is written through to its target inside the PATHs;\n"
     "                      refused (exit 1): a file changed on disk since it was read\n"
     "                      (checked right before the rename), a read-only file, a file\n"
     "                      with hard links. Temp files a killed run left are removed.\n"
     "  --force             write read-only files too\n"
     "  --json              per-site report (file, range, mode, candidates, chosen text,\n"
     "                      seed, confidence, check, ms), summary (with written_files and\n"
     "                      write_failures) and diffs\n"
     "  --batch-sites       decode the holes' greedy candidates together, in shared\n"
     "                      forward passes (the default on a GPU); --no-batch-sites\n"
     "                      decodes each alone with the K/V cache (the CPU default)\n"
     "  --no-progress, --device auto|cpu|cuda, --family NAME\n"
     "  --weights KIND      int8, bf16, f32 or auto: what the CPU computes in\n"
     "                      (see sculpt help lsp)\n"
     "  --backend URL [--backend-model NAME] [--api-key-env VAR] [--timeout MS] [--max-tries N]\n"
     "        [--provider NAME] [--fim-template NAME] [--stream on|off]\n"
     "                      fill from a remote FIM endpoint instead (providers and\n"
     "                      templates as in `sculpt help complete`)\n"
     "Symlinks leading out of the PATHs and binary files are skipped. Ctrl-C stops after\n"
     "the current site. Exit: 0 all sites done, 1 some failed or interrupted, 2 usage/input error.\n",
     sc_cli_batch},
    {"context", "show the prompt sculpt builds at FILE:LINE:COL",
     "usage: sculpt context FILE:LINE:COL [--root DIR] [--budget N] [--model DIR]\n"
     "                      [--open PATH]... [--edited PATH:LINE[-LINE]]... [--repeat N] --json\n"
     "       sculpt context --positions FILE [--cut] [options as above] --json\n"
     "\n"
     "Prints, as JSON, the prompt a completion at that position would get: the\n"
     "prefix and suffix windows, and each snippet with its source (path, line\n"
     "range), the reason it was chosen, what it defines (\"kind\"), whether it is\n"
     "a whole definition (\"body\") or its signature, and its token count.\n"
     "Snippets are the definitions of the names used on both sides of the cursor\n"
     "(the member access at the cursor through its receiver's type first, then\n"
     "the cursor's line, then the lines around it nearest first, those of the\n"
     "enclosing function before the others, then the file's most used), compact\n"
     "first (a prototype, a field, a struct's fields, a class's method\n"
     "signatures), their bodies when the budget allows: from the same file, then\n"
     "the files it imports (resolved by path), then the workspace (the git work\n"
     "tree holding the file, or --root; .gitignore is honoured). The workspace\n"
     "index is kept in $XDG_CACHE_HOME/sculpt/index (default ~/.cache/sculpt/index),\n"
     "so a second call on an unchanged tree starts warm (\"workspace\": \"cached\"\n"
     "counts the files reused). Tokens are counted with the tokenizer of --model\n"
     "(default: the default model). --budget defaults to what an editor gets by\n"
     "default: 1024 tokens, or what the model's context leaves after a 64-token\n"
     "canvas when that is less; an explicit --budget is used as given.\n"
     "--open PATH treats a file as an open editor buffer (its chunks most similar\n"
     "to the cursor's lines, by Jaccard over identifiers, become \"similar chunk\"\n"
     "snippets, with a score); --edited PATH:LINE[-LINE] is a recently edited range\n"
     "(\"recent edit\", the first given the most recent). Both repeat.\n"
     "--repeat N (a benchmark aid) retrieves again at N cursors spread over the\n"
     "file and adds their latency percentiles, samples and the peak memory as\n"
     "\"bench\". --positions FILE (an evaluation aid) reads FILE:LINE:COL lines and\n"
     "prints one compact JSON object per line, all from one index (a position\n"
     "that fails prints {\"target\", \"error\"} and the exit status is 1); --cut\n"
     "builds each prompt as if the rest of the cursor's line were not typed yet.\n",
     sc_cli_context},
    {"bench", "time the infill engine on a checkpoint",
     "usage: sculpt bench [--model DIR] [--canvas 16,32,64,128] [--context N]\n"
     "                    [--tokens-per-step K] [--block-len N] [--repeat N] [--weights KIND]\n"
     "       sculpt bench --replay FILE[:LINE:COL] [--model DIR] [--weights KIND]\n"
     "                    [--type N] [--context N] [--canvas M] [--compare] [--no-session]\n"
     "                    [--max-reuses N] [--max-edit N] [--margin N] [--threads N]\n"
     "                    [--steps N] [--eos-penalty X] [--json] [--verbose]\n"
     "       sculpt bench --step [--model DIR] [--weights KIND] [--context N] [--canvas M]\n"
     "       sculpt bench --synthetic open-dcoder-0.5b|coda-1.7b|dream-7b|tiny --device cuda\n"
     "                    [--context 512,4096] [--canvas 16,32,64,128] [--repeat N]\n"
     "                    [--profile [--variants LIST] [--chunks LIST]]\n"
     "                    [--infill [--device cpu] [--tokens-per-step K] [--block-len N]]\n"
     "\n"
     "Times whole infills for each canvas size, with and without the K/V cache,\n"
     "under a fixed schedule of K tokens committed per step (default 4), between\n"
     "N context tokens (default 512, half before and half after). Prints steps,\n"
     "ms per infill and per step, tokens/s and the cache's speedup, with the\n"
     "machine. Runs on the CPU backend; --weights as in sculpt help lsp.\n"
     "\n"
     "With --replay, the N characters (--type, default 400) before LINE:COL (default:\n"
     "the start of the file's middle line plus N) are removed and typed back one at\n"
     "a time; at every pause (after a space, newline or punctuation) one infill is\n"
     "asked at the cursor, a prompt of at most --context tokens (default 1024) fitted\n"
     "as every request is (the model's context and the family's frame; the prefix\n"
     "cut first, down to half), a --canvas (default 32) and the family's default\n"
     "preset, through one session that reuses the previous request's K/V (model.h;\n"
     "--no-session: every request in full). Prints the first request's time and the\n"
     "p50/p90/max of the rest, the reuse, and with --compare how many texts a full\n"
     "recompute (a second engine) also gives. --steps N decodes with the fixed-k\n"
     "schedule in N steps.\n"
     "\n"
     "With --step, one full forward pass over context + canvas tokens (default 1024\n"
     "+ 32) is timed as GFLOP/s, and one decoding step with the K/V cache (the canvas\n"
     "rows over the cached context) against the floor its bytes (weights and K/V)\n"
     "take at this machine's read bandwidth, measured in the same run, and the\n"
     "floor its arithmetic takes at the full pass's rate; the roofline is the larger.\n"
     "\n"
     "With --synthetic, weights at a real model's shapes are generated on the GPU\n"
     "and each denoising step is timed against the HBM roofline (needs a GPU).\n"
     "--profile splits one step's device time by kernel kind (CUDA events, inside a\n"
     "graph and eagerly), then times the step under each --variants switch (default\n"
     "default,graphs=off,attn=simt,head=host,fuse=off) and key split (--chunks, default\n"
     "auto,1,2,4,8,16,32). --infill runs whole infills through the engine (a full pass\n"
     "per block, window steps, the host's picks), K tokens a step, and prints the end-\n"
     "to-end time beside the sum of the same passes timed alone, and the graphs\n"
     "captured; on the CPU too (--device cpu, the tiny shape).\n",
     sc_cli_bench},
    {"serve", "serve completions over HTTP (OpenAI-compatible FIM)",
     "usage: sculpt serve [--model DIR] [--listen HOST:PORT] [--batch N] [--queue N]\n"
     "                    [--api-key-env VAR] [--device auto|cpu|cuda] [--context N]\n"
     "                    [--max-tokens N] [--max-connections N]\n"
     "                    [--max-client-connections N] [--max-body BYTES]\n"
     "                    [--header-timeout S] [--idle-timeout S] [--weights KIND]\n"
     "\n"
     "HTTP/1.1 on HOST:PORT (default 127.0.0.1:8080; port 0 picks a free one). Prints\n"
     "`sculpt serve: listening on HOST:PORT` on stderr once ready.\n"
     "  POST /v1/fim/completions (also /v1/completions): JSON {prompt, suffix,\n"
     "       max_tokens (canvas; default 32, capped by --max-tokens, 256, and by half\n"
     "       what the context leaves after the model's frame), temperature (default\n"
     "       0: greedy), top_p, seed, stop (string or up to 16), stream,\n"
     "       stream_drafts}.\n"
     "       Answers OpenAI's text_completion object (choices[0].text, finish_reason,\n"
     "       usage). With stream, server-sent events of increments: each holds only\n"
     "       new text (choices[0].text and choices[0].delta.content), from the\n"
     "       draft's stable left-to-right prefix (text a later step may still fill\n"
     "       in comes when its left side is done, at the latest in the last event,\n"
     "       with finish_reason), then `data: [DONE]`. With stream_drafts: true,\n"
     "       each event is instead the whole current draft and its step.\n"
     "  POST /infill: llama.cpp's shape (input_prefix, input_suffix, input_extra,\n"
     "       prompt, n_predict, n_indent, response_fields, ...; the answer in\n"
     "       content), for llama.vim and llama.vscode.\n"
     "  GET /v1/models: the model.  GET /health: status, model, queue depth, the\n"
     "       weights kind computed in.\n"
     "  GET /metrics: Prometheus text.\n"
     "Concurrent requests share forward passes (continuous batching): up to --batch\n"
     "(at most 16; default 8, measured faster than 1 on the CPU too) decode\n"
     "together, --queue (default 64) more wait, and beyond that\n"
     "429 with Retry-After. A client that disconnects cancels its request.\n"
     "--api-key-env VAR: requests (but /health) need `Authorization: Bearer $VAR`.\n"
     "--context N: positions per request (default min(model, 1024)); the prompt's\n"
     "tail and the suffix's head are kept, the prompt cut first down to half, then\n"
     "the suffix (then without EOS), as `sculpt complete` fits a file. Limits:\n"
     "headers 16 KiB (431), body --max-body (4 MiB, 413), a request complete within\n"
     "--header-timeout (10 s, 408), idle keep-alive --idle-timeout (60 s),\n"
     "--max-connections (256) of which at most\n"
     "--max-client-connections (64) from one client address (IPv6: its /64). Past\n"
     "either, 8 reserved connections answer only /health and /metrics (one request\n"
     "each, within 2 s), then 503. Behind a proxy every connection comes from it:\n"
     "raise --max-client-connections or cap the proxy's connections per server.\n"
     "--weights int8|bf16|f32|auto: what the CPU computes in (see sculpt help lsp).\n"
     "SIGINT/SIGTERM stop it cleanly.\n",
     sc_cli_serve},
    {"eval", "score a checkpoint on HumanEval-Infilling and repository tasks",
     "usage: sculpt eval BENCH [--model DIR|ORG/NAME | --score FILE|canonical] [--limit N] [--json]\n"
     "                   [--out FILE] [--results FILE] [--compare RESULTS [--against SYS]]\n"
     "                   [--preset fast|upstream] [--max-tokens N | --oracle-length]\n"
     "       sculpt eval compare A.jsonl B.jsonl [--system NAME] [--against NAME] [--json]\n"
     "\n"
     "BENCH: humaneval-single, humaneval-multi, humaneval-random, humaneval-random-light\n"
     "(openai/human-eval-infilling, vendored in tests/data), humaneval-test (its example\n"
     "problem), repo-single, repo-multi (lines out of tests/data/real's jq, click, cobra\n"
     "and ky, or every package under --repos), or a problems\n"
     ".jsonl[.gz] file in HumanEval's format.\n"
     "\n"
     "Each task is decoded as `sculpt complete` decodes (the model is --model DIR, else\n"
     "$SCULPT_MODEL, else the model sculpt ships; canvas 32 tokens for one line, 64\n"
     "for more). HumanEval-Infilling: every completed program runs against its tests\n"
     "in its own process (3 s, 1 GiB, a 16 MiB tmpfs folder, read-only file system,\n"
     "no network, its processes killed with it, where the kernel allows namespaces;\n"
     "the summary says which); it passes only when the tests ran to the end. pass@1,\n"
     "exact match, empty answers. Repository tasks: 1,000 single lines or runs of three\n"
     "from the packages' files (by a hash of their place), the prompt built as the LSP\n"
     "builds it (repository snippets, contextBudget 1024); exact match, character\n"
     "similarity, whether a Python file still compiles.\n"
     "Baselines on the same tasks: the shipped model (when --model is another) and the\n"
     "line n-gram (line tasks), trained on the model's corpus_manifest.json (else the\n"
     "shipped model's), reading candidate lines from the prompt first. McNemar's exact\n"
     "test (passed, or exact) pairs the model with each.\n"
     "\n"
     "  --score FILE        score the harness's sample format (task_id, completion; several\n"
     "                      per task: pass@1 is their mean) with no model; canonical: the\n"
     "                      benchmark's own middles\n"
     "  --out FILE          the first system's samples in the harness's format with its\n"
     "                      passed and result fields (the official harness can check them)\n"
     "  --results FILE      every system's per-task results as JSON Lines\n"
     "  --compare FILE      McNemar of this run's model against FILE's (an earlier\n"
     "                      --results; --against NAME picks FILE's system)\n"
     "  --limit N           the first N tasks      --tasks N  tasks a repository kind draws\n"
     "  --max-tokens N      the canvas             --oracle-length  the canonical's length\n"
     "  --block-len N       the preset's semi-autoregressive blocks in tokens (fast: 32)\n"
     "  --preset NAME       fast, upstream or auto (as sculpt complete)\n"
     "  --drafts on|off     drafts from the prompt and the package's index (as sculpt\n"
     "                      complete; on for fast); --draft-threshold P\n"
     "  --no-baselines      the model alone        --ngram-corpus PATH  manifest, .jsonl or folder\n"
     "  --data DIR          HumanEval's files      --repos DIR  a folder of package folders\n"
     "  --context-budget N  repository prompts' tokens (default 1024)\n"
     "  --timeout S --jobs N --memory MIB   per program (3, the CPUs, 1024)\n"
     "  --device auto|cpu|cuda --weights KIND --no-progress\n"
     "  --json              the summary as JSON (repository tasks: each package apart)\n"
     "compare: McNemar between two --results files (system model in each by default).\n"
     "Files are written atomically once the run is done; an interrupted run writes none.\n"
     "Exit: 0 done, 1 failed or interrupted, 2 usage or input error.\n",
     sc_cli_eval},
    {"help", "show help for a subcommand", "usage: sculpt help [SUBCOMMAND]\n", cmd_help},
    {NULL, NULL, NULL, NULL},
};

void sc_cli_fail(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "sculpt %s: ", name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void print_overview(FILE *f) {
  fprintf(f,
          "sculpt %s — diffusion code completion as a language server\n"
          "\n"
          "usage: sculpt SUBCOMMAND [OPTIONS]\n"
          "       sculpt --help | --version\n"
          "       sculpt help SUBCOMMAND\n"
          "\n"
          "subcommands:\n",
          sc_version());
  for (const sc_cli_command *c = sc_cli_commands; c->name; c++)
    fprintf(f, "  %-10s %s\n", c->name, c->summary);
}

static const sc_cli_command *find_command(const char *name) {
  for (const sc_cli_command *c = sc_cli_commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

static int cmd_help(int argc, char **argv) {
  if (argc < 2) {
    print_overview(stdout);
    return 0;
  }
  const sc_cli_command *c = find_command(argv[1]);
  if (!c) {
    sc_cli_fail("help", "unknown subcommand '%s' (see sculpt --help)", argv[1]);
    return 2;
  }
  fputs(c->usage, stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_overview(stderr);
    return 2;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
    print_overview(stdout);
    return 0;
  }
  if (strcmp(sub, "--version") == 0 || strcmp(sub, "-V") == 0) {
    printf("sculpt %s\n", sc_version());
    printf("backends: cpu%s\n", sc_kernels_compiled() ? ", cuda" : "");
    printf("tree-sitter: %s (language ABI %d..%d)\n", sc_syntax_runtime_version(),
           TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION, TREE_SITTER_LANGUAGE_VERSION);
    return 0;
  }
  const sc_cli_command *c = find_command(sub);
  if (!c) {
    fprintf(stderr, "sculpt: unknown subcommand '%s' (see sculpt --help)\n", sub);
    return 2;
  }
  /* `sculpt SUB --help` is the same as `sculpt help SUB`. */
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(c->usage, stdout);
      return 0;
    }
  return c->run(argc - 1, argv + 1);
}
