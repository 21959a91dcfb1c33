/* test_syntax_queries.c — every query in grammars/queries compiles against
 * its grammar, uses only the shared capture names, and finds what it should
 * in a small program per language. */
#include "context.h"
#include "sc_test.h"

#include <stdlib.h>
#include <string.h>

static const char *const k_langs[] = {"c",  "cpp",  "python", "javascript", "typescript", "tsx",
                                      "go", "rust", "java",   "bash",       "json"};
#define N_LANGS (sizeof k_langs / sizeof k_langs[0])

static const char *const k_captures[SC_QUERY_KIND_COUNT][16] = {
    [SC_QUERY_DEFINITIONS] = {"definition.function", "definition.method", "definition.class",
                              "definition.type", "definition.interface", "definition.field",
                              "definition.macro", "definition.constant", "definition.variable",
                              "definition.module", "name", "declarator", "scope", NULL},
    [SC_QUERY_IDENTIFIERS] = {"identifier", NULL},
    [SC_QUERY_IMPORTS] = {"import", "import.path", "import.name", NULL},
    [SC_QUERY_BLOCKS] = {"block.function", "block.class", "block", NULL},
};

static void test_all_compile(void) {
  for (size_t i = 0; i < N_LANGS; i++) {
    for (int k = 0; k < SC_QUERY_KIND_COUNT; k++) {
      sc_error err = {0};
      const TSQuery *q = NULL;
      sc_status s = sc_query_get(k_langs[i], (sc_query_kind)k, &q, &err);
      EXPECTF(s == SC_OK && q, "%s/%s: %s", k_langs[i], sc_query_kind_name((sc_query_kind)k),
              err.msg);
      if (!q) continue;
      EXPECTF(ts_query_pattern_count(q) > 0, "%s/%s has no pattern", k_langs[i],
              sc_query_kind_name((sc_query_kind)k));
      /* Captures starting with '_' are private to a predicate. */
      for (uint32_t c = 0; c < ts_query_capture_count(q); c++) {
        uint32_t len;
        const char *name = ts_query_capture_name_for_id(q, c, &len);
        if (len && name[0] == '_') continue;
        bool known = false;
        for (int j = 0; k_captures[k][j]; j++)
          if (strlen(k_captures[k][j]) == len && memcmp(k_captures[k][j], name, len) == 0)
            known = true;
        EXPECTF(known, "%s/%s: unexpected capture @%.*s", k_langs[i],
                sc_query_kind_name((sc_query_kind)k), (int)len, name);
      }
      /* Same pointer on the second call: compiled once. */
      const TSQuery *again = NULL;
      EXPECT(sc_query_get(k_langs[i], (sc_query_kind)k, &again, NULL) == SC_OK && again == q);
    }
  }
}

static void test_bad_arguments(void) {
  sc_error err = {0};
  const TSQuery *q = NULL;
  EXPECT(sc_query_get("cobol", SC_QUERY_BLOCKS, &q, &err) == SC_ERR_UNSUPPORTED && !q);
  EXPECT(sc_query_get("c", SC_QUERY_KIND_COUNT, &q, &err) == SC_ERR_UNSUPPORTED);
  EXPECT(sc_query_get(NULL, SC_QUERY_BLOCKS, &q, &err) == SC_ERR_UNSUPPORTED);
  EXPECT(sc_query_get("c", SC_QUERY_BLOCKS, NULL, &err) == SC_ERR_INVALID);
  EXPECT(sc_context_ts_language("cobol") == NULL);
  /* Every language the document mapping can return has a grammar. */
  static const char *const files[] = {"a.c", "a.hpp", "a.py", "a.mjs", "a.ts", "a.tsx",
                                      "a.go", "a.rs", "A.java", "a.sh", "a.json"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    const char *lang = sc_context_language_for(NULL, files[i]);
    EXPECTF(lang && sc_context_ts_language(lang), "%s -> %s has no grammar", files[i],
            lang ? lang : "(null)");
  }
  size_t len = 0;
  EXPECT(sc_query_source("c", SC_QUERY_IMPORTS, &len) != NULL && len > 0);
}

/* Runs query kind on src and appends "capture=text;" for every capture not
 * starting with '_' to buf, in match order. */
static void run_query(const char *lang, sc_query_kind kind, const char *src, char *buf,
                      size_t cap) {
  buf[0] = '\0';
  sc_error err = {0};
  sc_syntax_tree *t = NULL;
  if (sc_syntax_tree_new(lang, src, strlen(src), &t, &err) != SC_OK) {
    fprintf(stderr, "%s: %s\n", lang, err.msg);
    return;
  }
  const TSQuery *q = NULL;
  if (sc_query_get(lang, kind, &q, &err) != SC_OK) {
    sc_syntax_tree_free(t);
    return;
  }
  TSQueryCursor *cur = ts_query_cursor_new();
  ts_query_cursor_exec(cur, q, sc_syntax_tree_root(t));
  TSQueryMatch m;
  size_t used = 0;
  while (ts_query_cursor_next_match(cur, &m)) {
    for (uint16_t i = 0; i < m.capture_count; i++) {
      uint32_t nlen;
      const char *name = ts_query_capture_name_for_id(q, m.captures[i].index, &nlen);
      if (name[0] == '_') continue;
      uint32_t s = ts_node_start_byte(m.captures[i].node), e = ts_node_end_byte(m.captures[i].node);
      /* Statements and bodies are long: only names and paths show their text. */
      bool short_text = (nlen == 4 && memcmp(name, "name", 4) == 0) ||
                        (nlen == 5 && memcmp(name, "scope", 5) == 0) ||
                        (nlen == 10 && memcmp(name, "declarator", 10) == 0) ||
                        (nlen == 10 && memcmp(name, "identifier", 10) == 0) ||
                        (nlen == 11 && memcmp(name, "import.path", 11) == 0);
      int w = short_text ? snprintf(buf + used, cap - used, "%.*s=%.*s;", (int)nlen, name,
                                    (int)(e - s), src + s)
                         : snprintf(buf + used, cap - used, "%.*s;", (int)nlen, name);
      if (w < 0 || (size_t)w >= cap - used) break;
      used += (size_t)w;
    }
  }
  ts_query_cursor_delete(cur);
  sc_syntax_tree_free(t);
}

typedef struct {
  const char *lang;
  const char *src;
  /* substrings that must appear in the capture lists */
  const char *defs[6], *imports[3], *blocks[3];
} query_case;

static const query_case k_cases[] = {
    {"c",
     "#include <stdio.h>\n#include \"util.h\"\n"
     "struct point { int x, y; };\ntypedef unsigned long word;\n"
     "static int add(int a, int b) {\n  if (a) { return a + b; }\n  return b;\n}\n"
     "char *name_of(void) { return 0; }\n",
     {"definition.function;declarator=add(int a, int b);", "declarator=*name_of(void);",
      "definition.class;name=point;", "declarator=word;"},
     {"import.path=<stdio.h>;", "import.path=\"util.h\";"},
     {"block.function;", "block.class;", "block;"}},
    {"cpp",
     "#include <vector>\nusing std::vector;\nnamespace geo {\n"
     "class Shape {\n public:\n  virtual double area() const { return 0; }\n};\n"
     "double Shape2::perimeter() const { return 1.0; }\n"
     "int square(int x) { return x * x; }\n}\n",
     {"definition.class;name=Shape;", "definition.method;declarator=area() const;",
      "definition.method;scope=Shape2;name=perimeter;",
      "definition.function;declarator=square(int x);", "definition.module;name=geo;"},
     {"import.path=<vector>;", "import.path=std::vector;"},
     {"block.function;", "block.class;"}},
    {"python",
     "import os.path\nfrom .util import helper as h\n\n"
     "class Stack:\n    def push(self, x):\n        self.items.append(x)\n\n"
     "def top(s):\n    def inner():\n        pass\n    return s[-1]\n",
     {"definition.class;name=Stack;", "definition.method;name=push;",
      "definition.function;name=top;", "definition.function;name=inner;"},
     {"import.path=os.path;", "import.path=.util;"},
     {"block.function;", "block.class;"}},
    {"javascript",
     "import fs from 'fs';\nconst path = require(\"path\");\n"
     "function main(argv) { return argv.length; }\n"
     "const twice = (x) => { return 2 * x; };\n"
     "class Queue { push(x) { this.items.push(x); } }\n",
     {"definition.function;name=main;", "definition.function;name=twice;",
      "definition.class;name=Queue;", "definition.method;name=push;"},
     {"import.path='fs';", "import.path=\"path\";"},
     {"block.function;", "block.class;"}},
    {"typescript",
     "import { readFile } from \"fs/promises\";\n"
     "interface Point { x: number; y: number }\ntype Id = string;\n"
     "enum Color { Red, Green }\n"
     "export function dist(a: Point, b: Point): number { return Math.hypot(a.x - b.x, a.y - b.y); }\n"
     "class Box<T> { get(): T { return this.v; } }\n",
     {"definition.interface;name=Point;", "definition.type;name=Id;", "definition.type;name=Color;",
      "definition.function;name=dist;", "definition.class;name=Box;",
      "definition.method;name=get;"},
     {"import.path=\"fs/promises\";"},
     {"block.function;", "block.class;"}},
    {"tsx",
     "import React from 'react';\n"
     "export function Hello(props: { name: string }) { return <div>Hello {props.name}</div>; }\n"
     "const Row = (p: Props) => { return <tr />; };\n",
     {"definition.function;name=Hello;", "definition.function;name=Row;"},
     {"import.path='react';"},
     {"block.function;"}},
    {"go",
     "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n"
     "type Server struct { addr string }\ntype Handler func(int) error\n\n"
     "func (s *Server) Run() error { return nil }\n\n"
     "func main() {\n\tif len(os.Args) > 1 { fmt.Println(os.Args[1]) }\n}\n",
     {"definition.class;name=Server;", "definition.type;name=Handler;",
      "definition.method;scope=Server;name=Run;", "definition.function;name=main;",
      "definition.module;name=main;"},
     {"import.path=\"fmt\";", "import.path=\"os\";"},
     {"block.function;", "block.class;", "block;"}},
    {"rust",
     "use std::collections::HashMap;\nmod util;\n\n"
     "pub struct Cache { map: HashMap<u64, String> }\n"
     "impl Cache {\n    pub fn get(&self, k: u64) -> Option<&String> { self.map.get(&k) }\n}\n"
     "trait Store { fn put(&mut self, k: u64); }\n"
     "fn main() { let c = 1; }\n",
     {"definition.class;name=Cache;", "definition.method;name=get;",
      "definition.class;name=Store;", "definition.method;name=put;",
      "definition.function;name=main;"},
     {"import.path=std::collections::HashMap;", "import.path=util;"},
     {"block.function;", "block.class;"}},
    {"java",
     "package org.example;\nimport java.util.List;\n\n"
     "public class Greeter {\n  private final String name;\n"
     "  public Greeter(String name) { this.name = name; }\n"
     "  public String greet() { return \"hi \" + name; }\n}\n"
     "interface Shape { double area(); }\n",
     {"definition.class;name=Greeter;", "definition.method;name=Greeter;",
      "definition.method;name=greet;", "definition.type;name=Shape;",
      "definition.module;name=org.example;"},
     {"import.path=java.util.List;"},
     {"block.function;", "block.class;"}},
    {"bash",
     "#!/bin/bash\nsource ./lib.sh\n. \"$HOME/.env\"\n"
     "greet() {\n  echo \"hello $1\"\n}\nfunction main {\n  for f in *; do greet \"$f\"; done\n}\n",
     {"definition.function;name=greet;", "definition.function;name=main;"},
     {"import.path=./lib.sh;", "import.path=\"$HOME/.env\";"},
     {"block.function;", "block;"}},
    {"json",
     "{\n  \"$schema\": \"https://json.schemastore.org/package\",\n"
     "  \"name\": \"demo\",\n  \"scripts\": { \"test\": \"node t.js\" }\n}\n",
     {"name=name;", "name=scripts;"},
     {"import.path=https://json.schemastore.org/package;"},
     {"block;"}},
};

static void test_captures_on_samples(void) {
  static char buf[8192];
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    const query_case *c = &k_cases[i];
    struct { sc_query_kind kind; const char *const *want; size_t n; } groups[] = {
        {SC_QUERY_DEFINITIONS, c->defs, 6},
        {SC_QUERY_IMPORTS, c->imports, 3},
        {SC_QUERY_BLOCKS, c->blocks, 3},
    };
    for (size_t g = 0; g < 3; g++) {
      run_query(c->lang, groups[g].kind, c->src, buf, sizeof buf);
      for (size_t w = 0; w < groups[g].n && groups[g].want[w]; w++)
        EXPECTF(strstr(buf, groups[g].want[w]) != NULL, "%s/%s: want '%s' in %s", c->lang,
                sc_query_kind_name(groups[g].kind), groups[g].want[w], buf);
    }
    /* The sample must parse cleanly, or the captures prove little. */
    sc_syntax_tree *t = NULL;
    if (sc_syntax_tree_new(c->lang, c->src, strlen(c->src), &t, NULL) == SC_OK) {
      EXPECTF(sc_syntax_tree_error_count(t) == 0, "%s sample has syntax errors", c->lang);
      sc_syntax_tree_free(t);
    }
    /* Identifiers: every language finds some, and only identifier-like text. */
    run_query(c->lang, SC_QUERY_IDENTIFIERS, c->src, buf, sizeof buf);
    EXPECTF(strstr(buf, "identifier=") != NULL, "%s: no identifiers", c->lang);
  }
}

int main(void) {
  RUN(test_all_compile);
  RUN(test_bad_arguments);
  RUN(test_captures_on_samples);
  TEST_MAIN_END();
}
