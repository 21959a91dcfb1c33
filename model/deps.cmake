# Libraries model/ links beyond the base (all Debian 12 packages):
#   PCRE2 (the pre-tokenizer regex), utf8proc (NFC), OpenBLAS (CPU GEMMs).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
target_link_libraries(sc_model PRIVATE PkgConfig::PCRE2 PkgConfig::UTF8PROC
                      PkgConfig::OPENBLAS)
# oneDNN (libdnnl-dev 2.6) for the int8 and bf16 CPU compute (model/dnnl.c):
# its header at build time; the library is opened at run time (dlopen), so
# that OMP_WAIT_POLICY can be set before its OpenMP runtime starts.
find_path(DNNL_INCLUDE_DIR dnnl.h PATH_SUFFIXES oneapi/dnnl REQUIRED)
target_include_directories(sc_model PRIVATE ${DNNL_INCLUDE_DIR})
target_link_libraries(sc_model PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
