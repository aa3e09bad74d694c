# Writes the text of IN to OUT as one C++ raw string literal (for #include
# inside an initializer), so a source file can also be a string the program
# hands to a run-time compiler. Usage:
#   cmake -DIN=file -DOUT=file.inc -P embed_text.cmake
file(READ "${IN}" content)
string(FIND "${content}" ")KILN_TEXT\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string delimiter )KILN_TEXT\"")
endif()
file(WRITE "${OUT}" "R\"KILN_TEXT(${content})KILN_TEXT\"\n")
