# Runs the fuzzer for a bounded time on a scratch corpus seeded from SEEDS.
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
file(GLOB seeds ${SEEDS}/*.mmlt)
file(COPY ${seeds} DESTINATION ${CORPUS})
execute_process(COMMAND ${FUZZER} -max_total_time=20 -rss_limit_mb=2048 -timeout=5 -print_final_stats=1
                        -dict=${CMAKE_CURRENT_LIST_DIR}/mmlt.dict ${CORPUS}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz_parser found a crash (exit ${rc})")
endif()
