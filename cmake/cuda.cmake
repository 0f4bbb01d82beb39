# cmake/cuda.cmake — LLAMA_CUDA: AUTO (default) builds libggml-cuda.so when a CUDA compiler is
# found, ON requires one, OFF skips it. CMAKE_CUDA_ARCHITECTURES defaults to SASS for sm_80,
# sm_86, sm_89 and sm_90 plus compute_90 PTX (JIT-compiled by newer GPUs' drivers); CI builds
# one (e.g. -DCMAKE_CUDA_ARCHITECTURES=80-real, or 80-virtual for PTX only).
set(LLAMA_CUDA_ENABLED OFF)
if (DEFINED GGML_CUDA)   # llama.cpp's spelling (CMAKE_ARGS="-DGGML_CUDA=on") means the same
    set(LLAMA_CUDA ${GGML_CUDA})
endif()
string(TOUPPER "${LLAMA_CUDA}" _llama_cuda)
if (_llama_cuda STREQUAL "AUTO" OR _llama_cuda STREQUAL "ON" OR _llama_cuda STREQUAL "TRUE" OR _llama_cuda STREQUAL "1")
    include(CheckLanguage)
    check_language(CUDA)
    if (CMAKE_CUDA_COMPILER)
        set(LLAMA_CUDA_ENABLED ON)
    elseif (NOT _llama_cuda STREQUAL "AUTO")
        message(FATAL_ERROR "LLAMA_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
    else()
        message(STATUS "CUDA backend: no CUDA compiler found; building for the CPU only")
    endif()
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
        BUILD_RPATH "$ORIGIN"
        INSTALL_RPATH "$ORIGIN")
    if (CMAKE_SYSTEM_NAME STREQUAL "Linux")
        target_link_options(ggml-cuda PRIVATE -Wl,--no-undefined)
    endif()
    install(TARGETS ggml-cuda LIBRARY DESTINATION . RUNTIME DESTINATION .)
    message(STATUS "CUDA backend: ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, runtime ${_cudart})")
endif()
