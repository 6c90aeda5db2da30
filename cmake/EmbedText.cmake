# cmake -DIN=file -DOUT=file.cc -P EmbedText.cmake: writes BuiltinCatalogYaml() returning
# the bytes of IN.
file(READ ${IN} text)
file(WRITE ${OUT} "// Generated from data/catalog.yaml by cmake/EmbedText.cmake. Do not edit.\n"
  "#include \"core/catalog.h\"\n"
  "namespace tpufleet {\n"
  "std::string_view BuiltinCatalogYaml() {\n"
  "  static constexpr std::string_view kText = R\"tpufleet_catalog(${text})tpufleet_catalog\";\n"
  "  return kText;\n"
  "}\n"
  "}  // namespace tpufleet\n")
