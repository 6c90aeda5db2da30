# cmake -DIN=file -DOUT=file.cc -DFUNCTION=qualified::Name -DHEADER=dir/header.h
#       -P EmbedText.cmake
# Writes OUT, defining FUNCTION (declared in HEADER as `std::string_view Name();`) to
# return the bytes of IN, so that a data file is built into the binary.
file(READ ${IN} text)
file(WRITE ${OUT} "// Generated from ${IN} by cmake/EmbedText.cmake. Do not edit.\n"
  "#include \"${HEADER}\"\n"
  "std::string_view ${FUNCTION}() {\n"
  "  static constexpr std::string_view kText = R\"tpufleet_embed(${text})tpufleet_embed\";\n"
  "  return kText;\n"
  "}\n")
