# Fails when the library needs a glibc symbol version newer than MAX_GLIBC, or anything of
# libstdc++'s (linked statically under SHEAF_PORTABLE_GLIBC), and names each such symbol: a newer
# toolchain may call a function cmake/glibc_compat.c does not bind yet.
cmake_minimum_required(VERSION 3.25)
# usage: cmake -D LIBRARY=libsheaf.so -D OBJDUMP=objdump -D MAX_GLIBC=2.17 [-D ALLOW=symbol,...]
#              -P check_glibc_versions.cmake
string(REPLACE "," ";" ALLOW "${ALLOW}")
execute_process(COMMAND "${OBJDUMP}" -T "${LIBRARY}" OUTPUT_VARIABLE table RESULT_VARIABLE failed)
if(failed)
    message(FATAL_ERROR "${OBJDUMP} -T ${LIBRARY} failed")
endif()
# Lines such as "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) pthread_once".
string(REGEX MATCHALL "\\((GLIBC|GLIBCXX|CXXABI)_[0-9.]+\\)[ \t]+[^ \t\n]+" references "${table}")
set(newest 0)
set(too_new)
foreach(reference IN LISTS references)
    string(REGEX MATCH "^\\(([A-Z]+)_([0-9.]+)\\)[ \t]+(.+)$" parts "${reference}")
    set(family "${CMAKE_MATCH_1}")
    set(version "${CMAKE_MATCH_2}")
    set(symbol "${CMAKE_MATCH_3}")
    if(symbol IN_LIST ALLOW)
        continue()
    elseif(NOT family STREQUAL "GLIBC")
        list(APPEND too_new "${symbol} (${family}_${version}: libstdc++ is not linked statically)")
    elseif(version VERSION_GREATER MAX_GLIBC)
        list(APPEND too_new "${symbol} (GLIBC_${version})")
    elseif(version VERSION_GREATER newest)
        set(newest "${version}")
    endif()
endforeach()
if(NOT references)
    message(FATAL_ERROR "${OBJDUMP} -T ${LIBRARY} lists no glibc symbol versions")
endif()
if(too_new)
    list(JOIN too_new "\n  " too_new)
    message(FATAL_ERROR "${LIBRARY} would not load on glibc ${MAX_GLIBC}; it needs\n  ${too_new}\n"
        "Give each function its line in cmake/glibc_compat.c (its old version: objdump -T on this "
        "machine's libc.so.6 or libm.so.6 lists it in parentheses), or configure with "
        "-DSHEAF_PORTABLE_GLIBC=OFF for a library for this machine's glibc only.")
endif()
message(STATUS "${LIBRARY}: glibc ${newest} or later")
