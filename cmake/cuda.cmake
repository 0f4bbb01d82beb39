# cmake/cuda.cmake — LLAMA_CUDA: AUTO (default) builds libggml-cuda.so when an NVIDIA driver
# is installed here and a CUDA compiler is found, ON requires a compiler (driver or not: a build
# for another machine), OFF skips it. The driver decides AUTO because nvcc alone proves nothing
# (CI images and containers carry the toolkit without a GPU) and the CUDA build takes 4x to 20x
# longer than the rest. CMAKE_CUDA_ARCHITECTURES defaults to SASS for sm_80, sm_86, sm_89 and sm_90
# plus compute_90 PTX (JIT-compiled by newer GPUs' drivers); one architecture (e.g.
# -DCMAKE_CUDA_ARCHITECTURES=89-real, or native) builds about 4x faster.
set(LLAMA_CUDA_ENABLED OFF)
if (DEFINED GGML_CUDA)   # llama.cpp's spelling (CMAKE_ARGS="-DGGML_CUDA=on") means the same
    set(LLAMA_CUDA ${GGML_CUDA})
endif()
# Files whose presence means an NVIDIA driver is installed: the kernel module's version file and
# device node (Linux), WSL's driver library, Windows' driver DLL. A -D value replaces the list
# (the configure tests point it at a file they make or at nothing).
if (NOT DEFINED LLAMA_CUDA_DRIVER_PROBES)
    set(LLAMA_CUDA_DRIVER_PROBES /proc/driver/nvidia/version /dev/nvidiactl /usr/lib/wsl/lib/libcuda.so.1)
    if (WIN32)
        list(APPEND LLAMA_CUDA_DRIVER_PROBES "$ENV{SystemRoot}/System32/nvcuda.dll")
    endif()
endif()
set(LLAMA_CUDA_DRIVER "")
foreach(_probe ${LLAMA_CUDA_DRIVER_PROBES})
    if (EXISTS "${_probe}" AND LLAMA_CUDA_DRIVER STREQUAL "")
        set(LLAMA_CUDA_DRIVER "${_probe}")
    endif()
endforeach()
string(TOUPPER "${LLAMA_CUDA}" _llama_cuda)
if (_llama_cuda STREQUAL "AUTO" AND LLAMA_CUDA_DRIVER STREQUAL "")
    message(STATUS "CUDA backend: off, no NVIDIA driver here; building for the CPU only "
                   "(-DLLAMA_CUDA=ON builds it anyway, several minutes more)")
elseif (_llama_cuda STREQUAL "AUTO" OR _llama_cuda STREQUAL "ON" OR _llama_cuda STREQUAL "TRUE" OR _llama_cuda STREQUAL "1")
    include(CheckLanguage)
    check_language(CUDA)
    if (CMAKE_CUDA_COMPILER)
        set(LLAMA_CUDA_ENABLED ON)
    elseif (NOT _llama_cuda STREQUAL "AUTO")
        message(FATAL_ERROR "LLAMA_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
    else()
        message(STATUS "CUDA backend: off, an NVIDIA driver is here (${LLAMA_CUDA_DRIVER}) but no CUDA compiler "
                       "(put nvcc on PATH to build it); building for the CPU only")
    endif()
else()
    message(STATUS "CUDA backend: off (LLAMA_CUDA=${LLAMA_CUDA}); building for the CPU only")
endif()
set(LLAMA_CUDA_ENABLED ${LLAMA_CUDA_ENABLED} CACHE INTERNAL "libggml-cuda.so is built")

if (LLAMA_CUDA_ENABLED)
    if (NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
        set(CMAKE_CUDA_ARCHITECTURES "80-real;86-real;89-real;90")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    file(GLOB GGML_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/ggml/src/ggml-cuda/*.cu)
    add_library(ggml-cuda SHARED ${GGML_CUDA_SOURCES})
    target_include_directories(ggml-cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/ggml/include ${CMAKE_CURRENT_SOURCE_DIR}/ggml/src)
    target_compile_definitions(ggml-cuda PRIVATE _GNU_SOURCE)
    target_compile_options(ggml-cuda PRIVATE -Xcompiler=-fvisibility=hidden -Xcompiler=-Wall)
    if (TARGET CUDA::cudart_static)
        target_link_libraries(ggml-cuda PRIVATE llama CUDA::cudart_static)
        set(_cudart "static")
    else()
        target_link_libraries(ggml-cuda PRIVATE llama CUDA::cudart)
        set(_cudart "shared (no libcudart_static.a found)")
    endif()
    set_target_properties(ggml-cuda PROPERTIES
        CUDA_RUNTIME_LIBRARY Static
        CUDA_VISIBILITY_PRESET hidden
        BUILD_WITH_INSTALL_RPATH ON
        INSTALL_RPATH "$ORIGIN")
    if (CMAKE_SYSTEM_NAME STREQUAL "Linux")
        target_link_options(ggml-cuda PRIVATE -Wl,--no-undefined)
    endif()
    if (LLAMA_BUILD_TESTS)
        # the block readers on the host against the CPU dequantizers (no GPU needed)
        add_executable(test_cuda_host ${CMAKE_CURRENT_SOURCE_DIR}/tests/cuda/test_cuda_host.cu)
        target_include_directories(test_cuda_host PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/ggml/include ${CMAKE_CURRENT_SOURCE_DIR}/ggml/src)
        target_link_libraries(test_cuda_host PRIVATE llama)
        add_test(NAME test_cuda_host COMMAND test_cuda_host)
    endif()
    install(TARGETS ggml-cuda LIBRARY DESTINATION . RUNTIME DESTINATION .)
    message(STATUS "CUDA backend: ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, runtime ${_cudart})")
endif()
