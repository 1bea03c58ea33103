# floating_tree.cmake: a generated tree (`nelu robot gen tree`) for a floating base.
#   cmake -DIN=tree.urdf -DOUT=tree_floating.urdf -P floating_tree.cmake
# The generator attaches its first body to a massless link "base" by a revolute joint; a floating
# joint on that massless link would leave a direction of its motion without inertia (forward
# dynamics is singular there). This removes "base" and that joint, so that the first body (with its
# mass) is the root the floating joint attaches: the same N bodies, nv = N + 5.
file(READ "${IN}" text)
string(REPLACE "  <link name=\"base\"/>\n" "" text "${text}")
string(FIND "${text}" "<parent link=\"base\"/>" parent)
if(parent LESS 0)
  message(FATAL_ERROR "floating_tree: no joint from the link \"base\" in ${IN}")
endif()
string(SUBSTRING "${text}" 0 ${parent} head)
string(FIND "${head}" "  <joint " begin REVERSE)
string(SUBSTRING "${text}" ${parent} -1 tail)
string(FIND "${tail}" "</joint>\n" length)
math(EXPR end "${parent} + ${length} + 9")
string(SUBSTRING "${text}" 0 ${begin} before)
string(SUBSTRING "${text}" ${end} -1 after)
string(FIND "${after}" "<parent link=\"base\"/>" again)
if(NOT again LESS 0)
  message(FATAL_ERROR "floating_tree: more than one joint from the link \"base\" in ${IN}")
endif()
file(WRITE "${OUT}" "${before}${after}")
