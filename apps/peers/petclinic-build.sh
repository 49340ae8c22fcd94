#!/bin/sh
# Builds Spring PetClinic (spring-projects/spring-petclinic, Apache-2.0) for the lab without writing
# into its checkout: the tree is copied to build/peers/petclinic and Maven runs there, with its
# checkstyle and format checks off (they judge PetClinic's sources, not the build). The manifest
# apps/peers/petclinic.yml calls it (artifact.build).
#
# Usage: petclinic-build.sh PETCLINIC_DIR [MAVEN ARGUMENTS...]
set -eu
source=$1
shift
if [ ! -f "$source/pom.xml" ] || [ ! -f "$source/src/main/resources/db/mysql/schema.sql" ]; then
  echo "petclinic-build: $source is not a Spring PetClinic checkout (no pom.xml and db/mysql/schema.sql):" \
       "set PETCLINIC_DIR to one" >&2
  exit 2
fi
target=build/peers/petclinic
rm -rf "$target"
mkdir -p build/peers
cp -R "$source" "$target"
# A read-only checkout (CI's ../shared) copies read-only: Maven writes target/ in the copy.
chmod -R u+w "$target"
cd "$target"
echo "petclinic-build: from $source with $(java -version 2>&1 | head -1)"
exec "${MVN:-mvn}" -B -q -DskipTests -Dcheckstyle.skip -Dspring-javaformat.skip=true "$@" package
