# libFuzzer targets (tests/fuzz/fuzz_*.c). Every build replays their corpus
# (tests/fuzz/corpus/TARGET: seeds and the inputs of crashes found) as the
# tests fuzz.replay.TARGET; a build with -DRT_FUZZ=ON (clang) also has the
# fuzzers, which `ctest -L fuzz` runs for RT_FUZZ_SECONDS each.
set(RT_FUZZ_TARGETS request config state procfs)
set(RT_FUZZ_SECONDS 60 CACHE STRING "Seconds ctest runs each fuzz target (RT_FUZZ builds)")
set(RT_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(RT_FUZZ_ENV ${RT_TEST_ENV} "LSAN_OPTIONS=exitcode=86:suppressions=${RT_FUZZ_DIR}/lsan.supp")
list(FILTER RT_FUZZ_ENV EXCLUDE REGEX "^LSAN_OPTIONS=exitcode=86$")

foreach(t ${RT_FUZZ_TARGETS})
  set(src ${RT_FUZZ_DIR}/fuzz_${t}.c ${RT_FUZZ_DIR}/fuzz_tree.c)
  set(corpus ${RT_FUZZ_DIR}/corpus/${t})
  add_executable(replay_${t} ${src} ${RT_FUZZ_DIR}/replay.c)
  set(targets replay_${t})
  if(RT_FUZZ)
    add_executable(fuzz_${t} ${src})
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    list(APPEND targets fuzz_${t})
    add_test(NAME fuzz.${t}
             COMMAND /bin/sh ${RT_FUZZ_DIR}/run_fuzzer.sh $<TARGET_FILE:fuzz_${t}> ${corpus} ${RT_FUZZ_SECONDS})
    math(EXPR limit "${RT_FUZZ_SECONDS} + 120")
    set_tests_properties(fuzz.${t} PROPERTIES ENVIRONMENT "${RT_FUZZ_ENV}" TIMEOUT ${limit} LABELS fuzz)
  endif()
  foreach(exe ${targets})
    target_link_libraries(${exe} PRIVATE rtdaemon)
    target_compile_definitions(${exe} PRIVATE RT_FUZZ_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures")
    set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  endforeach()
  add_test(NAME fuzz.replay.${t} COMMAND replay_${t} ${corpus})
  set_tests_properties(fuzz.replay.${t} PROPERTIES ENVIRONMENT "${RT_FUZZ_ENV}" TIMEOUT 300 LABELS unit)
endforeach()
