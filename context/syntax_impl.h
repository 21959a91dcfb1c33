/* syntax_impl.h — helpers shared by syntax.c, plan.c and shape.c. Private to
 * context/. */
#ifndef SC_SYNTAX_IMPL_H
#define SC_SYNTAX_IMPL_H

#include "context.h"

/* The static copy of a grammar's language name, or NULL. */
const char *sc_syntax__language_name(const char *lang);

/* Row and byte column of a byte offset in text (len bytes). */
TSPoint sc_syntax__point_at(const char *text, size_t len, size_t byte);


#endif
