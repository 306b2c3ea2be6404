# A fake libnvidia-ml.so.1 (tests/gpu/fake_nvml.c) that the GPU tests load
# through the real dlopen path: "fake" exports the versioned names like a
# current driver, "fake-old" only the plain ones like an old driver.
foreach(variant fake fake-old)
  string(REPLACE "-" "_" target "nvml_${variant}")
  add_library(${target} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.c ${CMAKE_CURRENT_LIST_DIR}/fake_nvml_ext.c)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib" OUTPUT_NAME "nvidia-ml" SUFFIX ".so.1"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/gpu/${variant})
  target_link_options(${target} PRIVATE -Wl,-soname,libnvidia-ml.so.1)
  target_link_libraries(${target} PRIVATE Threads::Threads)
  if(variant STREQUAL "fake-old")
    target_compile_definitions(${target} PRIVATE FAKE_NVML_OLD)
  endif()
endforeach()

# What each NVML call costs the daemon, in front of the real library
# (tests/bench/bench_gpu_tick.py); its soname differs so that it can load
# the real libnvidia-ml.so.1.
add_library(nvml_cost SHARED ${CMAKE_CURRENT_LIST_DIR}/nvml_cost.c)
set_target_properties(nvml_cost PROPERTIES
  PREFIX "lib" OUTPUT_NAME "nvidia-ml" SUFFIX ".so.1"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/gpu/nvml-cost NO_SONAME ON)
target_link_options(nvml_cost PRIVATE -Wl,-soname,libnvml-cost.so)
target_link_libraries(nvml_cost PRIVATE ${CMAKE_DL_LIBS})

foreach(t test_gpu_nvml test_gpu_health)
  if(TARGET ${t})
    add_dependencies(${t} nvml_fake nvml_fake_old)
    # The default soname is found through LD_LIBRARY_PATH, as on a real host.
    set_property(TEST unit.${t} APPEND PROPERTY ENVIRONMENT
      "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpu/fake"
      "RT_FAKE_NVML_OLD=${CMAKE_CURRENT_BINARY_DIR}/gpu/fake-old/libnvidia-ml.so.1")
  endif()
endforeach()

# The daemon with the fake NVIDIA driver, end to end; its report, metrics and top.
foreach(t integration.test_gpu_daemon integration.test_gpus integration.test_report integration.test_metrics)
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "RT_FAKE_NVML_DIR=${CMAKE_CURRENT_BINARY_DIR}/gpu/fake")
  endif()
endforeach()

# The sampler with the fake driver: a job's totals across a restart.
if(TARGET test_job_resume)
  add_dependencies(test_job_resume nvml_fake)
  set_property(TEST unit.test_job_resume APPEND PROPERTY ENVIRONMENT
    "RT_FAKE_NVML_DIR=${CMAKE_CURRENT_BINARY_DIR}/gpu/fake")
endif()

# A GPU workload without the CUDA toolkit, for tests/gpu/real_gpu_check.py on a
# machine with a GPU (built here so that it always compiles).
add_executable(cuda_burn ${CMAKE_CURRENT_LIST_DIR}/cuda_burn.c)
target_link_libraries(cuda_burn PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(cuda_burn PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/gpu)
