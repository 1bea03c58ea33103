# FindSuiteSparse: the SuiteSparse libraries nelu uses (UMFPACK, BTF, AMD, COLAMD, CHOLMOD) as
# Debian installs them (libsuitesparse-dev, headers in include/suitesparse). Defines the imported
# target SuiteSparse::SuiteSparse.
find_path(SuiteSparse_INCLUDE_DIR umfpack.h PATH_SUFFIXES suitesparse)
set(_nelu_ss_libs umfpack btf amd colamd cholmod suitesparseconfig)
set(SuiteSparse_LIBRARIES "")
foreach(_lib ${_nelu_ss_libs})
  find_library(SuiteSparse_${_lib}_LIBRARY ${_lib})
  if(SuiteSparse_${_lib}_LIBRARY)
    list(APPEND SuiteSparse_LIBRARIES ${SuiteSparse_${_lib}_LIBRARY})
  endif()
endforeach()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SuiteSparse REQUIRED_VARS SuiteSparse_INCLUDE_DIR
  SuiteSparse_umfpack_LIBRARY SuiteSparse_btf_LIBRARY SuiteSparse_amd_LIBRARY
  SuiteSparse_colamd_LIBRARY SuiteSparse_cholmod_LIBRARY SuiteSparse_suitesparseconfig_LIBRARY)
if(SuiteSparse_FOUND AND NOT TARGET SuiteSparse::SuiteSparse)
  add_library(SuiteSparse::SuiteSparse INTERFACE IMPORTED)
  set_target_properties(SuiteSparse::SuiteSparse PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${SuiteSparse_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${SuiteSparse_LIBRARIES}")
endif()
