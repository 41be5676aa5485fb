using System.Reflection;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>
/// The binding's policy records as the catalogue's knobs (peer protocol 4). Every public
/// settable property of a policy is a knob, named in snake_case (<c>GatherDemuxBy</c>:
/// <c>gather_demux_by</c>), and so is every enum value (<c>OldestWaiter</c>:
/// <c>oldest_waiter</c>). <see cref="Apply{T}"/> sets a command's <c>policy</c> on the record
/// property by property, one code path for every knob: nothing here knows a knob by name.
/// </summary>
internal static class PolicyKnobs
{
    private static readonly NullabilityInfoContext Nullability = new();

    /// <summary>The knobs of a policy type, sorted.</summary>
    public static IReadOnlyList<string> Names<T>() => [.. Fields(typeof(T)).Keys.Order(StringComparer.Ordinal)];

    /// <summary>
    /// The policy with each knob of <paramref name="policy"/> set, the rest at the binding's
    /// defaults (a fresh record is the binding's default). A knob the type has not, or a value
    /// its property cannot take, is an <see cref="ArgumentException"/> naming it.
    /// </summary>
    public static T Apply<T>(JsonObject? policy) where T : new()
    {
        var fields = Fields(typeof(T));
        var applied = new T();
        foreach (var (knob, value) in policy ?? [])
        {
            if (!fields.TryGetValue(knob, out var field))
            {
                throw new ArgumentException($"{typeof(T).Name} has no knob '{knob}'");
            }

            var nullable = Nullability.Create(field).WriteState == NullabilityState.Nullable;
            field.SetValue(applied, Convert(knob, field.PropertyType, nullable, value));
        }

        return applied;
    }

    /// <summary><c>GatherDemuxBy</c>: <c>gather_demux_by</c>.</summary>
    public static string Snake(string pascal)
    {
        var text = new StringBuilder();
        foreach (var c in pascal)
        {
            if (char.IsUpper(c) && text.Length > 0)
            {
                text.Append('_');
            }

            text.Append(char.ToLowerInvariant(c));
        }

        return text.ToString();
    }

    private static Dictionary<string, PropertyInfo> Fields(Type type) =>
        type.GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .Where(p => p.CanWrite)
            .ToDictionary(p => Snake(p.Name), StringComparer.Ordinal);

    /// <summary>A JSON value as the property's type: bool, int, enum, text, or a list of those.</summary>
    private static object? Convert(string knob, Type type, bool nullable, JsonNode? value)
    {
        var kind = value?.GetValueKind();
        if (type == typeof(bool) && kind is JsonValueKind.True or JsonValueKind.False)
        {
            return value!.GetValue<bool>();
        }

        if (type == typeof(int) && kind == JsonValueKind.Number && value!.AsValue().TryGetValue<int>(out var number))
        {
            return number;
        }

        if (type.IsEnum && kind == JsonValueKind.String)
        {
            var name = value!.GetValue<string>();
            return Enum.GetValues(type).Cast<Enum>().FirstOrDefault(e => Snake(e.ToString()) == name)
                ?? throw new ArgumentException($"{knob} has no value '{name}'");
        }

        if (type == typeof(string) && kind == JsonValueKind.String)
        {
            // A text property that can be null takes the catalogue's "none" as no value at all
            // (reply_content_type: none sends no content_type).
            var text = value!.GetValue<string>();
            return nullable && text == "none" ? null : text;
        }

        if (type.IsGenericType && type.GetGenericTypeDefinition() == typeof(IReadOnlyList<>) && value is JsonArray items)
        {
            var element = type.GetGenericArguments()[0];
            var list = Array.CreateInstance(element, items.Count);
            for (var i = 0; i < items.Count; i++)
            {
                list.SetValue(Convert(knob, element, nullable: false, items[i]), i);
            }

            return list;
        }

        throw new ArgumentException($"{knob} cannot be {value?.ToJsonString() ?? "null"}");
    }
}
