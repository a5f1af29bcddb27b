// JavaCat prints serialization descriptors of classes in jinid's
// catalogue form (java/javaio/catalogue.go), read from the classes on
// the class path. It is how the catalogues of a Java implementation are
// made and checked:
//
//   javac -d /tmp/javacat tools/javacat/JavaCat.java
//   java --add-opens java.base/java.io=ALL-UNNAMED \
//     -cp /tmp/javacat:../shared/river/river-peer.jar JavaCat CLASS...
import java.io.ObjectStreamClass;
import java.io.ObjectStreamField;
import java.lang.reflect.Method;

public class JavaCat {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--methods")) {
            // The remote methods of interfaces, as name and JVM descriptor.
            for (int i = 1; i < args.length; i++) {
                Class<?> cl = Class.forName(args[i], false, JavaCat.class.getClassLoader());
                java.util.List<String> lines = new java.util.ArrayList<>();
                for (Method m : cl.getMethods()) {
                    lines.add("method " + m.getName() + " " + descriptor(m));
                }
                java.util.Collections.sort(lines);
                lines.forEach(System.out::println);
            }
            return;
        }
        if (args.length > 0 && args[0].equals("--entries")) {
            // Entry classes as Reggie sees them: the public instance fields
            // each class declares, sorted by name (superclasses listed too).
            java.util.Set<String> done = new java.util.HashSet<>();
            for (int i = 1; i < args.length; i++) {
                java.util.List<Class<?>> chain = new java.util.ArrayList<>();
                for (Class<?> c = Class.forName(args[i], false, JavaCat.class.getClassLoader()); c != null; c = c.getSuperclass()) chain.add(0, c);
                for (Class<?> c : chain) {
                    if (!done.add(c.getName())) continue;
                    StringBuilder b = new StringBuilder("entry " + c.getName());
                    if (c.getSuperclass() != null) b.append(" extends ").append(c.getSuperclass().getName());
                    System.out.println(b);
                    java.util.List<String> fields = new java.util.ArrayList<>();
                    for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                        int m = f.getModifiers();
                        if (!java.lang.reflect.Modifier.isPublic(m) || java.lang.reflect.Modifier.isStatic(m)
                            || java.lang.reflect.Modifier.isTransient(m) || java.lang.reflect.Modifier.isFinal(m)) continue;
                        fields.add("  " + f.getName() + " " + f.getType().getName());
                    }
                    java.util.Collections.sort(fields);
                    fields.forEach(System.out::println);
                }
            }
            return;
        }
        Method hasWrite = ObjectStreamClass.class.getDeclaredMethod("hasWriteObjectMethod");
        hasWrite.setAccessible(true);
        for (String name : args) {
            Class<?> cl = Class.forName(name, false, JavaCat.class.getClassLoader());
            ObjectStreamClass osc = ObjectStreamClass.lookupAny(cl);
            int flags = 0;
            if (java.io.Externalizable.class.isAssignableFrom(cl)) {
                flags |= 0x04 | 0x08;
            } else if (java.io.Serializable.class.isAssignableFrom(cl)) {
                flags |= 0x02;
                if ((Boolean) hasWrite.invoke(osc)) flags |= 0x01;
            }
            if (cl.isEnum()) flags |= 0x10;
            StringBuilder b = new StringBuilder();
            b.append("class ").append(cl.getName()).append(' ').append(osc.getSerialVersionUID())
             .append(String.format(" 0x%02x", flags));
            Class<?> sup = cl.getSuperclass();
            if (sup != null && java.io.Serializable.class.isAssignableFrom(sup)) {
                b.append(" extends ").append(sup.getName());
            }
            System.out.println(b);
            for (ObjectStreamField f : osc.getFields()) {
                System.out.print("  " + f.getTypeCode() + " " + f.getName());
                if (f.getTypeString() != null) System.out.print(" " + f.getTypeString());
                System.out.println();
            }
        }
    }

    static String descriptor(Method m) {
        StringBuilder b = new StringBuilder("(");
        for (Class<?> p : m.getParameterTypes()) b.append(sig(p));
        return b.append(')').append(sig(m.getReturnType())).toString();
    }

    static String sig(Class<?> c) {
        if (c.isArray()) return c.getName().replace('.', '/');
        if (c == void.class) return "V";
        if (c == boolean.class) return "Z";
        if (c == byte.class) return "B";
        if (c == char.class) return "C";
        if (c == short.class) return "S";
        if (c == int.class) return "I";
        if (c == long.class) return "J";
        if (c == float.class) return "F";
        if (c == double.class) return "D";
        return "L" + c.getName().replace('.', '/') + ";";
    }
}
