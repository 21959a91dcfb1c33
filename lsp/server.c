#include "lsp.h"
