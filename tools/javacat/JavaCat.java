// JavaCat prints serialization descriptors of classes in jinid's
// catalogue form (internal/javaio/catalogue.go), read from the classes on
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
}
