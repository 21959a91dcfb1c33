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
# The hot elementwise loops of the CPU path (quantizing, scaling, dtype
# conversion) are written for the compiler to vectorize (model_impl.h,
# SC_VECTOR_CLONES): -O3, and -fno-trapping-math so that their clamps and
# selects vectorize (no FP exception is ever read; results are unchanged:
# no reassociation, IEEE arithmetic as before). -ffp-contract=off keeps
# a*b+c two roundings in the AVX2 and AVX-512 clones as in the plain one
# (GCC fuses them into FMAs by default where the ISA has them), so every
# clone gives the same bits (model_impl.h).
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/quant.c ${CMAKE_CURRENT_SOURCE_DIR}/dnnl.c
                            ${CMAKE_CURRENT_SOURCE_DIR}/cpu.c
                            PROPERTIES COMPILE_OPTIONS "-O3;-fno-trapping-math;-ffp-contract=off")
