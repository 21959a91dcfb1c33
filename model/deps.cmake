# Libraries model/ links beyond the base (all Debian 12 packages):
#   PCRE2 (the pre-tokenizer regex), utf8proc (NFC), OpenBLAS (CPU GEMMs).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
target_link_libraries(sc_model PRIVATE PkgConfig::PCRE2 PkgConfig::UTF8PROC
                      PkgConfig::OPENBLAS)
